package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
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
}

// upstreamKey holds a wrapped server's original entry in the client
// config, so --undo can put it back exactly.
const upstreamKey = "x-bailiff-upstream"

func newInit(stdin io.Reader, stdout io.Writer) *cobra.Command {
	var p initParams
	c := &cobra.Command{
		Use:   "init --config FILE [--server NAME...]",
		Short: "Put the MCP servers of a client config behind bailiff run",
		Long: `init rewrites a client configuration with an "mcpServers" block (Claude
Code's .mcp.json, Cursor's mcp.json, Claude Desktop's
claude_desktop_config.json) so that each chosen stdio server starts
through 'bailiff run'. The original entry (command, args, env, cwd and the
rest) is kept under "` + upstreamKey + `"; --undo puts every one back.
Servers reached over HTTP cannot be wrapped and are left as they are.

It shows the change as a diff and asks before writing (--yes does not
ask). The file is replaced in one step, keeping its other contents.`,
		Example: `  bailiff init --config .mcp.json --policy policy.yaml
  bailiff init --config .mcp.json --server mail --server fs --yes
  bailiff init --config .mcp.json --undo`,
		Args: cobra.NoArgs,
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
	c.Flags().StringArrayVar(&p.servers, "server", nil, "wrap only this server (repeatable; default every stdio server)")
	c.Flags().StringVar(&p.policy, "policy", "", "policy file the wrapped servers run under (default: deny every call)")
	c.Flags().StringVar(&p.audit, "audit-dir", "", "directory for the audit logs, outside the project (default: the user's state directory)")
	c.Flags().StringArrayVar(&p.keys, "approver-key", nil, "an approver's public key (or .pub file) the wrapped servers trust (repeatable)")
	c.Flags().StringVar(&p.bailiff, "bailiff", "bailiff", "the bailiff command the client should start")
	c.Flags().BoolVar(&p.undo, "undo", false, "restore every wrapped server's original entry")
	c.Flags().BoolVar(&p.yes, "yes", false, "write without asking")
	return c
}

// object is a JSON object that keeps its keys in order, so rewriting a
// config changes only what it must.
type object []member

type member struct {
	Key string
	Val json.RawMessage
}

func parseObject(b []byte) (object, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	t, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := t.(json.Delim); !ok || d != '{' {
		return nil, errors.New("not a JSON object")
	}
	var o object
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		if o.get(k.(string)) != nil {
			return nil, fmt.Errorf("key %q appears twice", k)
		}
		o = append(o, member{k.(string), v})
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after the object")
	}
	return o, nil
}

func (o object) get(k string) json.RawMessage {
	for _, m := range o {
		if m.Key == k {
			return m.Val
		}
	}
	return nil
}

func (o object) set(k string, v json.RawMessage) object {
	for i := range o {
		if o[i].Key == k {
			o[i].Val = v
			return o
		}
	}
	return append(o, member{k, v})
}

func (o object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(m.Key)
		b.Write(k)
		b.WriteByte(':')
		b.Write(m.Val)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func runInit(stdin io.Reader, stdout io.Writer, p initParams) error {
	old, err := readInput(p.config, kindClientConfig)
	if err != nil {
		return err
	}
	top, err := parseObject(old)
	if err != nil {
		return usageErr(fmt.Errorf("%s: %v", p.config, err), "")
	}
	servers, err := parseObject(top.get("mcpServers"))
	if err != nil {
		return usageErr(fmt.Errorf("%s: no mcpServers object: %v", p.config, err), "")
	}
	for _, want := range p.servers {
		if servers.get(want) == nil {
			return usageErr(fmt.Errorf("%s has no server %q", p.config, want), "")
		}
	}
	// The logs and their approvals go outside the project by default: the
	// agent's own tools can usually write beside the client config.
	auditDir := p.audit
	if auditDir == "" {
		auditDir = stateDir()
	}
	keys, err := loadApproverKeys(p.keys, ".")
	if err != nil {
		return err
	}
	if auditDir, err = filepath.Abs(auditDir); err != nil {
		return usageErr(err, "")
	}
	policy := p.policy
	if policy != "" {
		// A policy that does not load would leave wrapped servers that
		// deny everything, found only when the client starts them.
		if _, err := loadPolicy(policy, nil); err != nil {
			return err
		}
		if policy, err = filepath.Abs(policy); err != nil {
			return usageErr(err, "")
		}
	}
	var changed []string
	for i, m := range servers {
		if len(p.servers) > 0 && !slices.Contains(p.servers, m.Key) {
			continue
		}
		entry, err := parseObject(m.Val)
		if err != nil {
			return usageErr(fmt.Errorf("%s: server %q: %v", p.config, m.Key, err), "")
		}
		orig := entry.get(upstreamKey)
		if p.undo {
			if orig != nil {
				servers[i].Val = orig
				changed = append(changed, m.Key)
			}
			continue
		}
		var command string
		if orig != nil || json.Unmarshal(entry.get("command"), &command) != nil || command == "" {
			continue // already wrapped, or not a stdio server
		}
		var args []string
		if a := entry.get("args"); a != nil {
			if err := json.Unmarshal(a, &args); err != nil {
				return usageErr(fmt.Errorf("%s: server %q: args: %v", p.config, m.Key, err), "")
			}
		}
		// bailiff's settings go in the environment, not the arguments:
		// some clients read every --flag in a server's arguments as theirs.
		run := append([]string{"run", command}, args...)
		env := map[string]any{}
		if e := entry.get("env"); e != nil {
			if err := json.Unmarshal(e, &env); err != nil {
				return usageErr(fmt.Errorf("%s: server %q: env: %v", p.config, m.Key, err), "")
			}
		}
		env["BAILIFF_SERVER"] = m.Key
		env["BAILIFF_AUDIT"] = filepath.Join(auditDir, "bailiff-"+m.Key+".audit.jsonl")
		if policy != "" {
			env["BAILIFF_POLICY"] = policy
		}
		if len(keys) > 0 {
			env["BAILIFF_APPROVER_KEYS"] = strings.Join(keys, " ")
		}
		wrapped := object{}
		for _, f := range entry {
			switch f.Key {
			case "command", "args", "env":
			default:
				wrapped = append(wrapped, f)
			}
		}
		cmdJSON, _ := json.Marshal(p.bailiff)
		argsJSON, _ := json.Marshal(run)
		envJSON, _ := json.Marshal(env)
		wrapped = append(object{{"command", cmdJSON}, {"args", argsJSON}, {"env", envJSON}}, wrapped...)
		wrapped = wrapped.set(upstreamKey, m.Val)
		b, _ := wrapped.MarshalJSON()
		servers[i].Val = b
		changed = append(changed, m.Key)
	}
	if len(changed) == 0 {
		_, err := fmt.Fprintln(stdout, "bailiff: nothing to change")
		return err
	}
	sb, _ := servers.MarshalJSON()
	top = top.set("mcpServers", sb)
	raw, _ := top.MarshalJSON()
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, raw, "", "  "); err != nil {
		return err
	}
	pretty.WriteByte('\n')
	var before bytes.Buffer
	if json.Indent(&before, old, "", "  ") != nil {
		before.Reset()
		before.Write(old)
	}
	verb := "wrap"
	if p.undo {
		verb = "restore"
	}
	fmt.Fprintf(stdout, "bailiff: %s %s in %s:\n", verb, strings.Join(changed, ", "), p.config)
	writeDiff(stdout, strings.TrimSuffix(before.String(), "\n"), strings.TrimSuffix(pretty.String(), "\n"))
	if !p.yes {
		fmt.Fprintf(stdout, "write %s? [y/N] ", p.config)
		answer, _ := bufio.NewReader(stdin).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
			fmt.Fprintln(stdout, "\nbailiff: nothing written")
			return nil
		}
	}
	mode := os.FileMode(0o644)
	if st, err := os.Stat(p.config); err == nil {
		mode = st.Mode().Perm()
	}
	if err := writeOutput(p.config, pretty.Bytes()); err != nil {
		return err
	}
	if err := os.Chmod(p.config, mode); err != nil {
		return usageErr(err, "")
	}
	_, err = fmt.Fprintf(stdout, "bailiff: wrote %s\n", p.config)
	return err
}

// writeDiff prints the lines that differ between a and b, with a line of
// context, as "-" and "+" lines (a longest-common-subsequence diff:
// configs are small).
func writeDiff(w io.Writer, a, b string) {
	x, y := strings.Split(a, "\n"), strings.Split(b, "\n")
	lcs := make([][]int, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	type line struct {
		op   byte
		text string
	}
	var out []line
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		switch {
		case i < len(x) && j < len(y) && x[i] == y[j]:
			out = append(out, line{' ', x[i]})
			i, j = i+1, j+1
		case j < len(y) && (i == len(x) || lcs[i][j+1] >= lcs[i+1][j]):
			out = append(out, line{'+', y[j]})
			j++
		default:
			out = append(out, line{'-', x[i]})
			i++
		}
	}
	for k, l := range out {
		near := l.op != ' ' || (k > 0 && out[k-1].op != ' ') || (k+1 < len(out) && out[k+1].op != ' ')
		if near {
			fmt.Fprintf(w, "%c %s\n", l.op, l.text)
		}
	}
}
