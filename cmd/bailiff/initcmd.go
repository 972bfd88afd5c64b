package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"bailiff/chain"
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
	c.Flags().StringVar(&p.bailiff, "bailiff", "", "the bailiff command the client should start (default: this binary's absolute path)")
	c.Flags().BoolVar(&p.undo, "undo", false, "restore every wrapped server's original entry")
	c.Flags().BoolVar(&p.yes, "yes", false, "write without asking")
	return c
}

// object is a JSON object that keeps its keys in order and where each
// value lies in the text it was read from, so rewriting a config changes
// only the bytes it must.
type object []member

type member struct {
	Key string
	Val json.RawMessage
	// start and end are Val's offsets in the parsed text; Val is exactly
	// those bytes.
	start, end int
}

func parseObject(b []byte) (object, error) {
	o, err := parseMembers(b)
	if err != nil {
		return nil, plainConfigError(b, err)
	}
	return o, nil
}

func parseMembers(b []byte) (object, error) {
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
		end := int(dec.InputOffset())
		o = append(o, member{Key: k.(string), Val: v, start: end - len(v), end: end})
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after the object")
	}
	return o, nil
}

// plainConfigError says what is wrong with a config in words, with the
// line, rather than as the decoder's "EOF".
func plainConfigError(b []byte, err error) error {
	var se *json.SyntaxError
	switch {
	case errors.Is(err, io.EOF) && len(bytes.TrimSpace(b)) == 0:
		return errors.New("it is empty, not a JSON object")
	case errors.As(err, &se):
		return fmt.Errorf("line %d: %v", 1+bytes.Count(b[:min(int(se.Offset), len(b))], []byte("\n")), se)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("it ends in the middle of a value")
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return chain.PlainJSON(err, "")
	}
	return err
}

func (o object) get(k string) json.RawMessage {
	if m := o.member(k); m != nil {
		return m.Val
	}
	return nil
}

func (o object) member(k string) *member {
	for i := range o {
		if o[i].Key == k {
			return &o[i]
		}
	}
	return nil
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

// indented writes o one key a line at indentation ind, re-indenting only
// the values of the keys in fresh (which bailiff made): every other value,
// the original entry above all, is kept byte for byte.
func (o object) indented(ind string, fresh ...string) []byte {
	var b bytes.Buffer
	inner := ind + "  "
	b.WriteString("{\n")
	for i, m := range o {
		if i > 0 {
			b.WriteString(",\n")
		}
		k, _ := json.Marshal(m.Key)
		b.WriteString(inner)
		b.Write(k)
		b.WriteString(": ")
		if !slices.Contains(fresh, m.Key) || json.Indent(&b, m.Val, inner, "  ") != nil {
			b.Write(m.Val)
		}
	}
	b.WriteString("\n" + ind + "}")
	return b.Bytes()
}

// edit replaces old[start:end] with text.
type edit struct {
	start, end int
	text       []byte
}

func apply(old []byte, edits []edit) []byte {
	var out bytes.Buffer
	at := 0
	for _, e := range edits {
		out.Write(old[at:e.start])
		out.Write(e.text)
		at = e.end
	}
	out.Write(old[at:])
	return out.Bytes()
}

// lineIndent is the leading space of the line holding offset at.
func lineIndent(b []byte, at int) string {
	line := b[bytes.LastIndexByte(b[:at], '\n')+1:]
	return string(line[:len(line)-len(bytes.TrimLeft(line, " \t"))])
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
		return "", usageErr(fmt.Errorf("bailiff is running from %s, a temporary build that is deleted when 'go run' exits", exe),
			"go install ./cmd/bailiff and run init with the installed bailiff, or name the command with --bailiff PATH")
	}
	return exe, nil
}

// goBuildTemp reports whether path lies in a go-build temporary directory
// (go run, go test), named go-build followed by digits.
func goBuildTemp(path string) bool {
	for _, part := range strings.Split(filepath.ToSlash(path), "/") {
		if n, ok := strings.CutPrefix(part, "go-build"); ok && n != "" && strings.Trim(n, "0123456789") == "" {
			return true
		}
	}
	return false
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
	ms := top.member("mcpServers")
	if ms == nil {
		return usageErr(fmt.Errorf("%s has no \"mcpServers\" object", p.config), "init reads a client config like {\"mcpServers\": {\"fs\": {\"command\": ...}}}")
	}
	servers, err := parseObject(ms.Val)
	if err != nil {
		return usageErr(fmt.Errorf("%s: mcpServers: %v", p.config, err), "")
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
	keys, err := loadApproverKeys(p.keys, ".", "init")
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
	var bailiff string
	if !p.undo {
		if bailiff, err = bailiffCommand(p.bailiff); err != nil {
			return err
		}
	}
	var changed []string
	var edits []edit
	for _, m := range servers {
		if len(p.servers) > 0 && !slices.Contains(p.servers, m.Key) {
			continue
		}
		entry, err := parseObject(m.Val)
		if err != nil {
			return usageErr(fmt.Errorf("%s: server %q: %v", p.config, m.Key, err), "")
		}
		span := edit{start: ms.start + m.start, end: ms.start + m.end}
		orig := entry.get(upstreamKey)
		if p.undo {
			if orig != nil {
				span.text = orig
				edits = append(edits, span)
				changed = append(changed, m.Key)
			}
			continue
		}
		if orig != nil {
			continue // already wrapped
		}
		var command string
		var run []string
		env := map[string]any{}
		// The keys of the original that the wrapped entry does not keep:
		// they say how to reach the server, which is now bailiff's job.
		replaced := []string{"command", "args", "env"}
		if json.Unmarshal(entry.get("command"), &command) == nil && command != "" {
			var args []string
			if a := entry.get("args"); a != nil {
				if err := json.Unmarshal(a, &args); err != nil {
					return usageErr(fmt.Errorf("%s: server %q: args: %v", p.config, m.Key, chain.PlainJSON(err, "")), "")
				}
			}
			// bailiff's settings go in the environment, not the arguments:
			// some clients read every --flag in a server's arguments as theirs.
			run = append([]string{"run", command}, args...)
		} else if u, why := httpServer(entry); why == "" {
			run = []string{"run"}
			env["BAILIFF_URL"] = u
			replaced = append(replaced, "url", "type")
		} else {
			// Neither a command nor a Streamable HTTP server bailiff can
			// reach: said, so that a server left unguarded is no surprise.
			fmt.Fprintf(stdout, "bailiff: left %s as it is: %s\n", m.Key, why)
			continue
		}
		if e := entry.get("env"); e != nil {
			if err := json.Unmarshal(e, &env); err != nil {
				return usageErr(fmt.Errorf("%s: server %q: env: %v", p.config, m.Key, chain.PlainJSON(err, "")), "")
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
		cmdJSON, _ := json.Marshal(bailiff)
		argsJSON, _ := json.Marshal(run)
		envJSON, _ := json.Marshal(env)
		wrapped := object{{Key: "command", Val: cmdJSON}, {Key: "args", Val: argsJSON}, {Key: "env", Val: envJSON}}
		for _, f := range entry {
			if !slices.Contains(replaced, f.Key) {
				wrapped = append(wrapped, f)
			}
		}
		// The original entry is kept verbatim, so --undo can put back
		// its exact bytes.
		wrapped = append(wrapped, member{Key: upstreamKey, Val: m.Val})
		if bytes.ContainsRune(m.Val, '\n') {
			span.text = wrapped.indented(lineIndent(old, span.start), "command", "args", "env")
		} else {
			span.text, _ = wrapped.MarshalJSON()
		}
		edits = append(edits, span)
		changed = append(changed, m.Key)
	}
	if len(changed) == 0 {
		_, err := fmt.Fprintln(stdout, "bailiff: nothing to change")
		return err
	}
	updated := apply(old, edits)
	verb := "wrap"
	if p.undo {
		verb = "restore"
	}
	fmt.Fprintf(stdout, "bailiff: %s %s in %s:\n", verb, strings.Join(changed, ", "), p.config)
	writeDiff(stdout, p.config, string(old), string(updated))
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
	if err := writeOutput(p.config, updated); err != nil {
		return err
	}
	if err := os.Chmod(p.config, mode); err != nil {
		return usageErr(err, "")
	}
	_, err = fmt.Fprintf(stdout, "bailiff: wrote %s\n", p.config)
	return err
}

// httpServer gives the URL of an entry that names a Streamable HTTP
// server bailiff run --url can reach in its place. One with headers is
// left alone: bailiff would not send them (a token, typically), and the
// wrapped server would stop working. So is one of the older HTTP+SSE
// transport ("type": "sse"), which bailiff does not speak. why says
// why an entry is not one.
func httpServer(entry object) (u, why string) {
	var typ string
	if json.Unmarshal(entry.get("url"), &u) != nil || u == "" {
		return "", "it has neither a command nor a url"
	}
	if entry.get("headers") != nil {
		return "", "it sends headers (a token, typically), which bailiff run --url would not send"
	}
	if t := entry.get("type"); t != nil {
		if json.Unmarshal(t, &typ) != nil || (typ != "http" && typ != "streamable-http" && typ != "streamableHttp") {
			return "", fmt.Sprintf("its transport %s is not Streamable HTTP, the only one bailiff run --url speaks", t)
		}
	}
	if parsed, err := url.Parse(u); err != nil || (parsed.Scheme != "http" && parsed.Scheme != "https") || parsed.Host == "" {
		return "", fmt.Sprintf("its url %q is not an http(s) URL", u)
	}
	return u, ""
}

// diffContext is the number of unchanged lines shown around a change, as
// diff -u shows them.
const diffContext = 3

// writeDiff prints a unified diff of a and b, the file name's text before
// and after (a longest-common-subsequence diff: configs are small).
func writeDiff(w io.Writer, name, a, b string) {
	x, y := diffLines(a), diffLines(b)
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
		a, b int // lines of a and b before this one
	}
	var out []line
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		switch {
		case i < len(x) && j < len(y) && x[i] == y[j]:
			out = append(out, line{' ', x[i], i, j})
			i, j = i+1, j+1
		case i < len(x) && (j == len(y) || lcs[i+1][j] >= lcs[i][j+1]):
			out = append(out, line{'-', x[i], i, j})
			i++
		default:
			out = append(out, line{'+', y[j], i, j})
			j++
		}
	}
	fmt.Fprintf(w, "--- %s\n+++ %s\n", name, name)
	for k := 0; k < len(out); {
		if out[k].op == ' ' {
			k++
			continue
		}
		// A hunk: from diffContext lines before this change to
		// diffContext lines after the last change within reach.
		start, end := max(0, k-diffContext), k
		for end < len(out) {
			if out[end].op != ' ' {
				k = end
			} else if end-k > 2*diffContext {
				break
			}
			end++
		}
		end = min(end, k+diffContext+1)
		var na, nb int
		for _, l := range out[start:end] {
			if l.op != '+' {
				na++
			}
			if l.op != '-' {
				nb++
			}
		}
		fmt.Fprintf(w, "@@ -%s +%s @@\n", hunkRange(out[start].a, na), hunkRange(out[start].b, nb))
		for _, l := range out[start:end] {
			fmt.Fprintf(w, "%c%s\n", l.op, l.text)
		}
		k = end
	}
}

// hunkRange is a hunk header's "start,count", where start is 1-based and,
// for an empty range, the line before it; a count of 1 is left out (as
// diff -u writes them).
func hunkRange(before, n int) string {
	switch n {
	case 0:
		return fmt.Sprintf("%d,0", before)
	case 1:
		return strconv.Itoa(before + 1)
	}
	return fmt.Sprintf("%d,%d", before+1, n)
}

func diffLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}
