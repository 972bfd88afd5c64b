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
	"bailiff/internal/clientconfig"
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

// writableRoots are the places the tools bailiff serves may write: what
// the server's command line names (clientconfig.WritableRoots), and every
// allowed path prefix of the policy.
func writableRoots(pol *engine.Policy, server string, dir string, command []string) []clientconfig.Writable {
	out := clientconfig.WritableRoots(server, dir, command)
	if pol != nil {
		for _, p := range pol.PathPrefixes() {
			out = append(out, clientconfig.Writable{Path: p, Why: "the policy allows writes under " + p})
		}
	}
	return out
}

// guarded is a file or directory the served tools must not reach: what
// it is, its path, and what an agent could do there.
type guarded struct{ what, path, harm string }

// stateGuarded are the audit log's locations: the log and its evidence
// directory.
func stateGuarded(audit string) []guarded {
	harm := "an agent could rewrite the record of what it did"
	return []guarded{
		{"the audit log " + audit, audit, harm},
		{"the audit log " + audit, chain.EvidenceDir(audit), harm},
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
func checkOutside(places []guarded, roots []clientconfig.Writable) error {
	for _, r := range roots {
		root := clientconfig.Resolve(r.Path)
		for _, p := range places {
			if clientconfig.Within(clientconfig.Resolve(p.path), root) {
				return usageErr(fmt.Errorf("%s would be inside %s, which the served tools may write (%s): %s", p.what, r.Path, r.Why, p.harm),
					"put it outside every served root")
			}
		}
	}
	return nil
}

// checkStateOutside refuses an audit log (with its evidence directory)
// inside a path a served tool may write: an agent that can write there
// could rewrite the evidence.
func checkStateOutside(audit string, roots []clientconfig.Writable) error {
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
