package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"bailiff/engine"
	"bailiff/internal/clientconfig"
)

type initParams struct {
	config  string
	servers []string
	policy  string
	audit   string
	bailiff string
	undo    bool
	yes     bool
	keys    []string
	// principal is who the agent acts for, written into each wrapped
	// server's environment.
	principal string
	// allowDenyAll wraps servers the policy would deny every call to.
	allowDenyAll bool
}

func newInit(stdin io.Reader, stdout io.Writer) *cobra.Command {
	var p initParams
	c := &cobra.Command{
		Use:   "init --config FILE [--server NAME...]",
		Short: "Put the MCP servers of a client config behind bailiff run",
		Long: `init rewrites a client configuration with an "mcpServers" block (Claude
Code's .mcp.json, Cursor's mcp.json, Claude Desktop's
claude_desktop_config.json) so that each chosen stdio server starts
through 'bailiff run'. The original entry (command, args, env, cwd and the
rest) is kept under "` + clientconfig.UpstreamKey + `"; --undo puts every one back.
A server reached over Streamable HTTP ("url") is wrapped too: the client
starts 'bailiff run' with BAILIFF_URL, and bailiff is the server's HTTP
client. One with "headers", or of the older SSE transport, is left as it
is (bailiff would not send the headers).

The wrapped servers start this bailiff binary by its absolute path, so a
client that does not share the shell's PATH still finds it; a binary
'go run' built in a temporary directory is refused (install it first, or
name the command with --bailiff).

It shows the change as a unified diff and asks before writing (--yes
does not ask). Only the wrapped entries' bytes change; the rest of the
file, its spacing and key order included, is kept, and --undo gives back
the original bytes.`,
		Example: `  bailiff init --config .mcp.json --policy policy.yaml
  bailiff init --config .mcp.json --server mail --server fs --yes
  bailiff init --config .mcp.json --undo`,
		Args: noArgs(),
		PreRunE: func(cmd *cobra.Command, args []string) error {
			if p.config == "" {
				return usageErr(errors.New("init needs --config, the client's configuration file"), "bailiff init --config .mcp.json")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runInit(stdin, stdout, p)
		},
	}
	c.Flags().StringVar(&p.config, "config", "", "client configuration file with an mcpServers block")
	c.Flags().StringArrayVar(&p.servers, "server", nil, "wrap only this server (repeatable; default every stdio and Streamable HTTP server)")
	c.Flags().StringVar(&p.policy, "policy", "", "policy file the wrapped servers run under (default: deny every call)")
	c.Flags().StringVar(&p.audit, "audit-dir", "", "directory for the audit logs, outside the project (default: the user's state directory)")
	c.Flags().StringArrayVar(&p.keys, "approver-key", nil, "an approver's public key (or .pub file) the wrapped servers trust (repeatable)")
	c.Flags().StringVar(&p.principal, "principal", "", "who the wrapped servers' agent acts for (default: $USER now, written into the config, since a client started from a desktop may not pass $USER on)")
	c.Flags().StringVar(&p.bailiff, "bailiff", "", "the bailiff command the client should start (default: this binary's absolute path)")
	c.Flags().BoolVar(&p.allowDenyAll, "allow-deny-all", false, "wrap a server the policy has no rule that allows or asks for (it will deny every call)")
	c.Flags().BoolVar(&p.undo, "undo", false, "restore every wrapped server's original entry")
	c.Flags().BoolVar(&p.yes, "yes", false, "write without asking")
	return c
}

// executable is os.Executable, replaced by tests.
var executable = os.Executable

// bailiffCommand is the command a wrapped server starts: --bailiff, else
// this binary's absolute path with symlinks resolved, since a client
// often starts servers without the shell's PATH.
func bailiffCommand(flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	exe, err := executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		return "", usageErr(fmt.Errorf("cannot find the running bailiff binary: %v", err), "name the command with --bailiff PATH")
	}
	if goBuildTemp(exe) {
		return "", usageErr(fmt.Errorf("bailiff is running from %s, a binary 'go run' built, which Go deletes when it exits or trims its build cache", exe),
			"go install ./cmd/bailiff and run init with the installed bailiff, or name the command with --bailiff PATH")
	}
	return exe, nil
}

// goBuildTemp reports whether path is a binary go run or go test made: in
// a go-build temporary directory (go-build followed by digits), or in the
// build cache, where go run keeps its binaries since Go 1.24
// (CACHE/XX/HASH-d/NAME), which go clean -cache or the cache's own
// trimming deletes.
func goBuildTemp(path string) bool {
	parts := strings.Split(filepath.ToSlash(path), "/")
	for i, part := range parts {
		if n, ok := strings.CutPrefix(part, "go-build"); ok && n != "" && strings.Trim(n, "0123456789") == "" {
			return true
		}
		// The cache may be anywhere (GOCACHE in the environment or in
		// go env -w's file): its shape is XX/HASH-d/NAME.
		if i+2 == len(parts)-1 && len(part) == 2 && isHex(part) {
			if h, ok := strings.CutSuffix(parts[i+1], "-d"); ok && len(h) >= 32 && isHex(h) {
				return true
			}
		}
	}
	if cache := os.Getenv("GOCACHE"); cache != "" && cache != "off" {
		if rel, err := filepath.Rel(cache, path); err == nil && !strings.HasPrefix(rel, "..") {
			return true
		}
	}
	return false
}

func isHex(s string) bool {
	return s != "" && strings.Trim(s, "0123456789abcdef") == ""
}

func runInit(stdin io.Reader, stdout io.Writer, p initParams) error {
	old, err := readInput(stdin, p.config, kindClientConfig)
	if err != nil {
		return err
	}
	if err := clientconfig.Check(old, p.servers); err != nil {
		return configError(p.config, err)
	}
	// The logs and their approvals go outside the project by default: the
	// agent's own tools can usually write beside the client config.
	auditDir := p.audit
	if auditDir == "" {
		auditDir = stateDir()
	}
	keys, err := loadApproverKeys(stdin, p.keys, ".", "init")
	if err != nil {
		return err
	}
	if auditDir, err = filepath.Abs(auditDir); err != nil {
		return usageErr(err, "")
	}
	pol, policy, err := initPolicy(stdin, p.policy)
	if err != nil {
		return err
	}
	var bailiff string
	principal := p.principal
	if !p.undo {
		if bailiff, err = bailiffCommand(p.bailiff); err != nil {
			return err
		}
		if principal == "" {
			principal = os.Getenv("USER")
		}
		if principal == "" {
			// Found only when the client starts a server, this would be
			// every wrapped server failing to start.
			return usageErr(errors.New("no principal: $USER is empty and --principal is not set"), "name who the agent acts for, e.g. bailiff init --principal ana ...")
		}
	}
	opt := clientconfig.Options{Servers: p.servers, Undo: p.undo, Command: bailiff,
		AuditDir: auditDir, Policy: policy, ApproverKeys: keys, Principal: principal}
	ch, err := rewriteServed(stdout, old, opt, pol, p)
	if err != nil {
		return err
	}
	for _, l := range ch.Left {
		fmt.Fprintf(stdout, "bailiff: left %s as it is: %s\n", l.Name, l.Why)
	}
	if len(ch.Changed) == 0 {
		_, err := fmt.Fprintln(stdout, "bailiff: nothing to change")
		return err
	}
	changed, updated := ch.Changed, ch.Updated
	verb := "wrap"
	if p.undo {
		verb = "restore"
	}
	fmt.Fprintf(stdout, "bailiff: %s %s in %s:\n", verb, strings.Join(changed, ", "), p.config)
	clientconfig.WriteDiff(stdout, p.config, string(old), string(updated))
	if !p.yes {
		fmt.Fprintf(stdout, "write %s? [y/N] ", p.config)
		answer, _ := bufio.NewReader(stdin).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
			fmt.Fprintln(stdout, "\nbailiff: nothing written")
			return nil
		}
	}
	if err := rewriteKeepingMode(p.config, updated); err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "bailiff: wrote %s\n", p.config)
	return err
}

// initPolicy loads the policy the wrapped servers will run under, and
// gives its absolute path: a policy that does not load would leave
// wrapped servers that deny everything, found only when the client starts
// them. No policy is nil and "".
func initPolicy(stdin io.Reader, name string) (*engine.Policy, string, error) {
	if name == "" {
		return nil, "", nil
	}
	pol, err := loadPolicy(stdin, name, nil)
	if err != nil {
		return nil, "", err
	}
	abs, err := filepath.Abs(name)
	if err != nil {
		return nil, "", usageErr(err, "")
	}
	return pol, abs, nil
}

// rewriteServed rewrites the config, and checks the policy against each
// server it wraps: one the policy does not serve would refuse to start,
// found only when the client starts it, so init says so now, by its name
// in this config. Allowed, those servers start with
// BAILIFF_ALLOW_DENY_ALL.
func rewriteServed(stdout io.Writer, old []byte, opt clientconfig.Options, pol *engine.Policy, p initParams) (*clientconfig.Change, error) {
	ch, err := clientconfig.Rewrite(old, opt)
	if err != nil {
		return ch, configError(p.config, err)
	}
	if pol == nil || p.undo {
		return ch, nil
	}
	if opt.AllowDenyAll = unserved(pol, ch.Changed); opt.AllowDenyAll == nil {
		return ch, nil
	}
	how := servedHow{"its key under mcpServers in " + p.config, "pass --allow-deny-all", "--allow-deny-all"}
	if err := checkServed(stdout, pol, p.policy, ch.Changed, p.allowDenyAll, how); err != nil {
		return ch, err
	}
	if ch, err = clientconfig.Rewrite(old, opt); err != nil {
		return ch, configError(p.config, err)
	}
	return ch, nil
}

// rewriteKeepingMode replaces the config with data, keeping its
// permissions: a client config holding tokens is often private, and the
// rewrite must not make it readable to others.
func rewriteKeepingMode(name string, data []byte) error {
	mode := os.FileMode(0o644)
	if st, err := os.Stat(name); err == nil {
		mode = st.Mode().Perm()
	}
	if err := writeOutput(name, data); err != nil {
		return err
	}
	if err := os.Chmod(name, mode); err != nil {
		return usageErr(err, "")
	}
	return nil
}

// configError is a config Rewrite refused, as init reports it.
func configError(name string, err error) error {
	var missing *clientconfig.NoServerError
	switch {
	case errors.Is(err, clientconfig.ErrNoServers):
		return usageErr(fmt.Errorf("%s has no \"mcpServers\" object", name), "init reads a client config like {\"mcpServers\": {\"fs\": {\"command\": ...}}}")
	case errors.As(err, &missing):
		return usageErr(fmt.Errorf("%s has no server %q", name, missing.Name), "")
	}
	return usageErr(fmt.Errorf("%s: %v", name, err), "")
}
