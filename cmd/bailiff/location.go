package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"bailiff/chain"
	"bailiff/engine"
)

// stateDir is the per-user directory for audit logs and approval state,
// outside any project an agent works in: $BAILIFF_STATE_DIR, else
// $XDG_STATE_HOME/bailiff, else ~/.local/state/bailiff (on macOS and
// Windows the user config directory's bailiff/state).
func stateDir() string {
	if d := os.Getenv("BAILIFF_STATE_DIR"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "bailiff")
	}
	if runtime.GOOS != "darwin" && runtime.GOOS != "windows" {
		if h, err := os.UserHomeDir(); err == nil {
			return filepath.Join(h, ".local", "state", "bailiff")
		}
	}
	if d, err := os.UserConfigDir(); err == nil {
		return filepath.Join(d, "bailiff", "state")
	}
	return filepath.Join(os.TempDir(), "bailiff-state")
}

// writable is a path a served tool may write, and why bailiff thinks so.
type writable struct{ path, why string }

// writableRoots are the places the tools bailiff serves may write: every
// argument of a server's command that names an existing file or directory
// (how server-filesystem and most servers are given their roots; a
// "--flag=PATH" counts by its value, and "~" or "~/DIR" is the home
// directory, as such servers expand it), and every allowed path prefix of
// the policy. A shell command (sh -c SCRIPT and the like) hides its
// roots: every path in the script counts (see scriptRoots). A server that
// takes its roots from the client (MCP roots) is not covered here: the
// proxy takes protected locations out of the client's roots instead.
func writableRoots(pol *engine.Policy, server string, dir string, command []string) []writable {
	var out []writable
	if script, ok := shellScript(command); ok {
		out = append(out, scriptRoots(server, dir, script)...)
	}
	for _, a := range command[min(1, len(command)):] {
		for _, cand := range []string{a, afterEq(a)} {
			if cand == "" || strings.HasPrefix(cand, "-") {
				continue
			}
			cand = expandHome(cand)
			if !filepath.IsAbs(cand) {
				cand = filepath.Join(dir, cand)
			}
			if _, err := os.Stat(cand); err == nil {
				out = append(out, writable{cand, fmt.Sprintf("server %s is given %s", server, a)})
			}
		}
	}
	if pol != nil {
		for _, p := range pol.PathPrefixes() {
			out = append(out, writable{p, "the policy allows writes under " + p})
		}
	}
	return out
}

// expandHome expands a leading "~" or "~/" to the home directory, as
// server-filesystem (and a shell) does with its root arguments.
func expandHome(p string) string {
	if p != "~" && !strings.HasPrefix(p, "~/") && !strings.HasPrefix(p, "~"+string(filepath.Separator)) {
		return p
	}
	h, err := os.UserHomeDir()
	if err != nil || h == "" {
		return p
	}
	return filepath.Join(h, p[1:])
}

// shellScript returns the script of a shell command: sh, bash, dash, zsh,
// ksh, ash or busybox (or env running one) with -c (or a flag cluster
// holding c, as -lc or -ec) runs a script.
func shellScript(command []string) (string, bool) {
	for len(command) > 1 && filepath.Base(command[0]) == "env" {
		command = command[1:]
		for len(command) > 1 && (strings.HasPrefix(command[0], "-") || strings.Contains(command[0], "=")) {
			command = command[1:]
		}
	}
	if len(command) < 2 {
		return "", false
	}
	switch strings.TrimSuffix(filepath.Base(command[0]), ".exe") {
	case "sh", "bash", "dash", "zsh", "ksh", "ash", "busybox":
	default:
		return "", false
	}
	// Everything after the first -c cluster is taken for the script and
	// its arguments: more words than the shell reads as the script, never
	// fewer ("bash -o pipefail -c SCRIPT" included).
	for i, a := range command[1:] {
		if strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.Contains(a, "c") {
			return strings.Join(command[2+i:], " "), true
		}
	}
	return "", false
}

// scriptRoots are the roots a shell script may hand the server it runs,
// which bailiff cannot know: every word of the script (split on white
// space, quotes and shell punctuation, with $VAR and ${VAR} from bailiff's
// environment, which the shell inherits, and ~ expanded) that is an
// absolute or home path, existing or not, and every other word naming an
// existing file or directory. It overestimates (a script's every path is
// taken for a root), never the other way for paths spelled out; a path
// the script computes (cd, $(...), a variable it sets) is beyond it.
func scriptRoots(server, dir, script string) []writable {
	words := strings.FieldsFunc(script, func(r rune) bool {
		return r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '"' || r == '\'' || r == ';' || r == '&' || r == '|' || r == '(' || r == ')' || r == '`' || r == '<' || r == '>'
	})
	var out []writable
	for _, w := range words {
		for _, cand := range []string{w, afterEq(w)} {
			if cand == "" || strings.HasPrefix(cand, "-") {
				continue
			}
			cand = expandHome(os.ExpandEnv(cand))
			why := fmt.Sprintf("server %s runs a shell script naming %s", server, w)
			if filepath.IsAbs(cand) {
				out = append(out, writable{cand, why})
				continue
			}
			if _, err := os.Stat(filepath.Join(dir, cand)); err == nil {
				out = append(out, writable{filepath.Join(dir, cand), why})
			}
		}
	}
	return out
}

func afterEq(a string) string {
	if _, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(a, "-") {
		return v
	}
	return ""
}

// resolve makes p absolute and resolves the symlinks of its longest
// existing prefix, so a link or a relative path cannot hide where it is.
func resolve(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return filepath.Clean(p)
	}
	rest := ""
	for cur := abs; ; {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return abs
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

func within(p, root string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// guarded is a file or directory the served tools must not reach: what
// it is, its path, and what an agent could do there.
type guarded struct{ what, path, harm string }

// stateGuarded are the audit log's locations: the log, its evidence and
// its approvals directories.
func stateGuarded(audit string) []guarded {
	harm := "an agent could forge its own approvals there"
	return []guarded{
		{"the audit log " + audit + " and its approvals", audit, harm},
		{"the audit log " + audit + " and its approvals", chain.EvidenceDir(audit), harm},
		{"the audit log " + audit + " and its approvals", audit + ".approvals", harm},
	}
}

// trustGuarded are the files that decide what an approval is and what is
// allowed: the policy, the approver public key files, the gateway's
// configuration, the digest secret, and the approver private key
// ($BAILIFF_APPROVER_KEY) and key directory of the user running bailiff,
// which approve signs with.
func trustGuarded(policy, config, secret string, keyFiles []guarded) []guarded {
	out := slices.Clone(keyFiles)
	if policy != "" {
		out = append(out, guarded{"the policy " + policy, policy, "an agent could rewrite what it is allowed"})
	}
	if config != "" {
		out = append(out, guarded{"the gateway configuration " + config, config, "an agent could rewrite the policy, the approvers and the audit log's place"})
	}
	if secret != "" {
		out = append(out, guarded{"the digest secret " + secret, secret, "an agent could read or replace the key of its redacted calls' digests"})
	}
	if k := os.Getenv("BAILIFF_APPROVER_KEY"); k != "" {
		out = append(out, guarded{"the approver private key " + k + " ($BAILIFF_APPROVER_KEY)", k, "an agent could read an approver's private key and sign its own approvals"})
	}
	if d, err := approverDir(); err == nil {
		out = append(out, guarded{"the approver private-key directory " + d, d, "an agent could read an approver's private key and sign its own approvals"})
	}
	return out
}

// checkOutside refuses a guarded location inside a path a served tool may
// write (or, for a key, read): an agent that can reach it could forge
// approvals, rewrite the evidence or the rules.
func checkOutside(places []guarded, roots []writable) error {
	for _, r := range roots {
		root := resolve(r.path)
		for _, p := range places {
			if within(resolve(p.path), root) {
				return usageErr(fmt.Errorf("%s would be inside %s, which the served tools may write (%s): %s", p.what, r.path, r.why, p.harm),
					"put it outside every served root")
			}
		}
	}
	return nil
}

// checkStateOutside refuses an audit log (with its evidence and approvals
// directories) inside a path a served tool may write: an agent that can
// write there could forge approvals, or rewrite the evidence.
func checkStateOutside(audit string, roots []writable) error {
	err := checkOutside(stateGuarded(audit), roots)
	var ee *ExitError
	if errors.As(err, &ee) {
		ee.Hint = "put the audit log outside every served root"
		// The state directory is the default; suggest it only when it is
		// not itself what was refused (a served $HOME holds it).
		if alt := filepath.Join(stateDir(), filepath.Base(audit)); checkOutside(stateGuarded(alt), roots) == nil {
			ee.Hint += ", e.g. --audit " + alt
		} else {
			ee.Hint += ": the default state directory is inside one too (set BAILIFF_STATE_DIR)"
		}
	}
	return err
}

// noPrincipal refuses a session without a subject: nobody to hold the
// "the principal never approves" rule against.
func noPrincipal() error {
	return usageErr(errors.New("no principal: $USER is empty and --principal (or principal.subject) is not set"),
		"name who the agent acts for, e.g. --principal ana")
}

// protectedPaths are the guarded locations as the proxy takes them out of
// the client's MCP roots.
func protectedPaths(places []guarded) []string {
	var out []string
	for _, p := range places {
		if !slices.Contains(out, p.path) {
			out = append(out, p.path)
		}
	}
	return out
}

// loadApproverKeys reads the approver public keys a gateway trusts: each
// value is a key itself (name+hash+key) or a file holding one, relative to
// dir.
func loadApproverKeys(stdin io.Reader, values []string, dir, command string) ([]string, error) {
	keys, _, err := loadApproverKeyFiles(stdin, values, dir, command)
	return keys, err
}

// loadApproverKeyFiles is loadApproverKeys, also returning the files the
// keys were read from, as locations to guard. command is the one run, as
// an error names it.
func loadApproverKeyFiles(stdin io.Reader, values []string, dir, command string) (out []string, files []guarded, err error) {
	for _, v := range values {
		v = strings.TrimSpace(v)
		if v == "" {
			continue
		}
		key := v
		if _, err := chain.CheckPublicKey(v); err != nil {
			f := v
			if !filepath.IsAbs(f) {
				f = filepath.Join(dir, f)
			}
			if _, err := os.Stat(f); err != nil {
				return nil, nil, usageErr(fmt.Errorf("approver key %s is neither a public key nor a readable file (%s: %v)", v, f, unwrapPath(err)), "bailiff keygen --approver NAME makes one")
			}
			b, err := readInput(stdin, f, kindPublicKey, kindPrivateKey) // a private one is named below
			if err != nil {
				return nil, nil, err
			}
			key = strings.TrimSpace(string(b))
			files = append(files, guarded{"the approver key " + v, f, "an agent could put its own key there and approve its own calls"})
		}
		if strings.HasPrefix(key, "PRIVATE+KEY+") {
			return nil, nil, usageErr(fmt.Errorf("approver key %s is a private key: bailiff %s needs only the public one (.pub)", v, command), "give the .pub file bailiff keygen wrote beside it; the private key stays with its approver")
		}
		if _, err := chain.CheckPublicKey(key); err != nil {
			return nil, nil, usageErr(fmt.Errorf("approver key %s: %v", v, err), "")
		}
		if err := wantApproverKey("approver key "+v, key); err != nil {
			return nil, nil, err
		}
		if !slices.Contains(out, key) {
			out = append(out, key)
		}
	}
	return out, files, nil
}

// noPrincipalKey refuses a trusted approver key named for the principal:
// such a key could only ever be refused.
func noPrincipalKey(keys []string, principal string) error {
	for _, k := range keys {
		if name, _ := chain.CheckPublicKey(k); name == principal {
			return usageErr(errors.New("approver key "+k+" is named for the principal "+principal+", who never approves their own agent's calls"), "")
		}
	}
	return nil
}
