package main

import (
	"errors"
	"fmt"
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
// "--flag=PATH" counts by its value), and every allowed path prefix of the
// policy. A server that takes its roots from the client (MCP roots) is not
// covered: those are not known when the gateway starts.
func writableRoots(pol *engine.Policy, server string, dir string, command []string) []writable {
	var out []writable
	for _, a := range command[min(1, len(command)):] {
		for _, cand := range []string{a, afterEq(a)} {
			if cand == "" || strings.HasPrefix(cand, "-") {
				continue
			}
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

// checkStateOutside refuses an audit log (with its evidence and approvals
// directories) inside a path a served tool may write: an agent that can
// write there could forge approvals, or rewrite the evidence.
func checkStateOutside(audit string, roots []writable) error {
	places := []string{audit, chain.EvidenceDir(audit), audit + ".approvals"}
	for _, r := range roots {
		root := resolve(r.path)
		for _, p := range places {
			if within(resolve(p), root) {
				return usageErr(fmt.Errorf("the audit log %s and its approvals would be inside %s, which the served tools may write (%s): an agent could forge its own approvals there", audit, r.path, r.why),
					"put the audit log outside every served root, e.g. --audit "+filepath.Join(stateDir(), filepath.Base(audit)))
			}
		}
	}
	return nil
}

// loadApproverKeys reads the approver public keys a gateway trusts: each
// value is a key itself (name+hash+key) or a file holding one, relative to
// dir.
func loadApproverKeys(values []string, dir string) ([]string, error) {
	var out []string
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
			b, err := os.ReadFile(f)
			if err != nil {
				return nil, usageErr(fmt.Errorf("approver key %s is neither a public key nor a readable file (%s: %v)", v, f, unwrapPath(err)), "bailiff keygen --approver NAME makes one")
			}
			key = strings.TrimSpace(string(b))
		}
		if strings.HasPrefix(key, "PRIVATE+KEY+") {
			return nil, usageErr(fmt.Errorf("approver key %s is a private key: the gateway needs only the public one (.pub)", v), "")
		}
		if _, err := chain.CheckPublicKey(key); err != nil {
			return nil, usageErr(fmt.Errorf("approver key %s: %v", v, err), "")
		}
		if !slices.Contains(out, key) {
			out = append(out, key)
		}
	}
	return out, nil
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
