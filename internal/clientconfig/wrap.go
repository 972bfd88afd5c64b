// Package clientconfig rewrites an MCP client's configuration (an
// "mcpServers" block, as Claude Code, Cursor and Claude Desktop write it)
// so that chosen servers start through bailiff run, and puts them back.
// Only the rewritten entries' bytes change: the rest of the file, its
// spacing and key order included, is kept, and undoing gives back the
// original bytes.
package clientconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"

	"bailiff/internal/jsontext"
)

// UpstreamKey holds a wrapped server's original entry, so undoing can put
// it back exactly.
const UpstreamKey = "x-bailiff-upstream"

// Options say which servers to wrap and what the wrapped entries start.
type Options struct {
	// Servers are the names to wrap or restore; none means every one.
	Servers []string
	// Undo restores every wrapped server instead of wrapping.
	Undo bool
	// Command is the bailiff binary the client starts (unused by Undo).
	Command string
	// AuditDir holds the logs, one per server; Policy (optional) and
	// ApproverKeys are what each wrapped server runs under. All three
	// are written as given: the caller makes paths absolute.
	AuditDir     string
	Policy       string
	ApproverKeys []string
	// Principal is who the wrapped servers' agent acts for: a client
	// started from a desktop may give its servers no $USER.
	Principal string
	// AllowDenyAll are the servers to start even though the policy has
	// no rule that allows or asks for them.
	AllowDenyAll []string
}

// Change is a rewritten config.
type Change struct {
	Updated []byte
	// Changed are the servers wrapped or restored, in file order.
	Changed []string
	// Left are servers bailiff cannot stand in front of, and why: said,
	// so that a server left unguarded is no surprise.
	Left []Left
}

// Left is a server left as it is.
type Left struct{ Name, Why string }

// ErrNoServers is a config without an "mcpServers" object.
var ErrNoServers = errors.New(`no "mcpServers" object`)

// NoServerError is a server asked for by name that the config lacks.
type NoServerError struct{ Name string }

func (e *NoServerError) Error() string { return fmt.Sprintf("no server %q", e.Name) }

// Rewrite wraps (or, with o.Undo, restores) the servers of the config
// old. Errors do not name the file; the caller does.
func Rewrite(old []byte, o Options) (*Change, error) {
	ms, servers, err := serversOf(old, o.Servers)
	if err != nil {
		return nil, err
	}
	ch := &Change{}
	var edits []edit
	for _, m := range servers {
		if len(o.Servers) > 0 && !slices.Contains(o.Servers, m.Key) {
			continue
		}
		entry, err := parseObject(m.Val)
		if err != nil {
			return nil, fmt.Errorf("server %q: %v", m.Key, err)
		}
		span := edit{start: ms.start + m.start, end: ms.start + m.end}
		orig := entry.get(UpstreamKey)
		switch {
		case orig != nil && !runsBailiff(entry, o.Command):
			// Anyone can write the key: an entry that holds it but does
			// not start bailiff run is neither guarded nor bailiff's to
			// restore.
			ch.Left = append(ch.Left, Left{m.Key, "it holds " + UpstreamKey + " but does not start bailiff run, so it is not guarded: remove the key, or restore the entry by hand"})
			continue
		case o.Undo && orig != nil:
			span.text = unshift(orig, upstreamTight(entry, m.Val))
		case o.Undo:
			continue // nothing to restore
		case orig != nil:
			ch.Left = append(ch.Left, Left{m.Key, "it is already wrapped; to change its options, bailiff init --undo, then init again"})
			continue
		default:
			wrapped, why, err := wrap(m.Key, entry, o)
			if err != nil {
				return nil, fmt.Errorf("server %q: %v", m.Key, err)
			}
			if why != "" {
				ch.Left = append(ch.Left, Left{m.Key, why})
				continue
			}
			// The original entry is kept verbatim, one level deeper, so
			// undoing can put back its exact bytes.
			wrapped = append(wrapped, member{Key: UpstreamKey, Val: m.Val})
			if bytes.ContainsRune(m.Val, '\n') {
				wrapped[len(wrapped)-1].Val = shift(m.Val, indentUnit)
				wrapped[len(wrapped)-1].tight = true
				span.text = wrapped.indented(lineIndent(old, span.start), "command", "args", "env")
			} else {
				span.text, _ = wrapped.MarshalJSON()
			}
		}
		edits = append(edits, span)
		ch.Changed = append(ch.Changed, m.Key)
	}
	ch.Updated = apply(old, edits)
	return ch, nil
}

// Check says what Rewrite would refuse in the config as a whole, or in
// the servers named, before anything else is worked out for it.
func Check(old []byte, names []string) error {
	_, _, err := serversOf(old, names)
	return err
}

func serversOf(old []byte, names []string) (*member, object, error) {
	// Members are read one level at a time and values not bailiff's are
	// kept as written: a repeat deeper down, or in what is kept, would
	// be read one way by bailiff and maybe another by the client.
	var dup *jsontext.DuplicateKeyError
	if err := jsontext.NoDuplicateKeys(old); errors.As(err, &dup) {
		return nil, nil, fmt.Errorf("line %d: key %q appears twice", 1+bytes.Count(old[:dup.Offset], []byte("\n")), dup.Key)
	} else if err != nil {
		return nil, nil, err
	}
	top, err := parseObject(old)
	if err != nil {
		return nil, nil, err
	}
	ms := top.member("mcpServers")
	if ms == nil {
		return nil, nil, ErrNoServers
	}
	servers, err := parseObject(ms.Val)
	if err != nil {
		return nil, nil, fmt.Errorf("mcpServers: %v", err)
	}
	for _, want := range names {
		if servers.get(want) == nil {
			return nil, nil, &NoServerError{want}
		}
	}
	return ms, servers, nil
}

// wrap is the entry that starts server name through bailiff run, without
// its upstream copy; why says why there is none.
func wrap(name string, entry object, o Options) (object, string, error) {
	var command string
	var run []string
	env := map[string]any{}
	// The keys of the original that the wrapped entry does not keep:
	// they say how to reach the server, which is now bailiff's job.
	replaced := []string{"command", "args", "env"}
	if name == "" || strings.ContainsAny(name, " \t\r\n") {
		// bailiff run would refuse the name, or name the server
		// otherwise than the policy was checked against.
		return nil, fmt.Sprintf("its name %q is not one bailiff can give a server (empty, or with a space): rename it", name), nil
	}
	if json.Unmarshal(entry.get("command"), &command) == nil && command != "" {
		var args []string
		if a := entry.get("args"); a != nil {
			if err := json.Unmarshal(a, &args); err != nil {
				return nil, "", fmt.Errorf("args: %v", jsontext.PlainJSON(err, ""))
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
		return nil, why, nil
	}
	if e := entry.get("env"); e != nil {
		if err := json.Unmarshal(e, &env); err != nil {
			return nil, "", fmt.Errorf("env: %v", jsontext.PlainJSON(err, ""))
		}
	}
	env["BAILIFF_SERVER"] = name
	env["BAILIFF_AUDIT"] = filepath.Join(o.AuditDir, "bailiff-"+name+".audit.jsonl")
	if o.Policy != "" {
		env["BAILIFF_POLICY"] = o.Policy
	}
	if o.Principal != "" {
		env["BAILIFF_PRINCIPAL"] = o.Principal
	}
	if slices.Contains(o.AllowDenyAll, name) {
		env["BAILIFF_ALLOW_DENY_ALL"] = "1"
	}
	if len(o.ApproverKeys) > 0 {
		env["BAILIFF_APPROVER_KEYS"] = strings.Join(o.ApproverKeys, " ")
	}
	cmdJSON, _ := json.Marshal(o.Command)
	argsJSON, _ := json.Marshal(run)
	envJSON, _ := json.Marshal(env)
	wrapped := object{{Key: "command", Val: cmdJSON}, {Key: "args", Val: argsJSON}, {Key: "env", Val: envJSON}}
	for _, f := range entry {
		if !slices.Contains(replaced, f.Key) {
			wrapped = append(wrapped, f)
		}
	}
	return wrapped, "", nil
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

// indentUnit is what a wrapped entry's members are indented by, past the
// entry's own indentation.
const indentUnit = "  "

// shift indents every line of v after the first by unit: the original
// entry, kept under UpstreamKey a level deeper than it was written,
// reads as nested in the diff and the file. A JSON value holds no raw
// newline inside a string, so only the space between tokens changes.
// The member is then written with no space after its colon (tight):
// that, and not the layout, tells unshift the entry was shifted, since
// no layout can (an entry may close at any indentation, and an earlier
// bailiff kept entries unshifted).
func shift(v []byte, unit string) []byte {
	return bytes.ReplaceAll(v, []byte("\n"), []byte("\n"+unit))
}

// unshift undoes shift for an entry written tight; any other is given
// back as it is, as is one edited so that a line lost the unit.
func unshift(v []byte, tight bool) []byte {
	if !tight {
		return v
	}
	lines := bytes.Split(v, []byte("\n"))
	for _, l := range lines[1:] {
		if !bytes.HasPrefix(l, []byte(indentUnit)) {
			return v
		}
	}
	for i := range lines[1:] {
		lines[i+1] = lines[i+1][len(indentUnit):]
	}
	return bytes.Join(lines, []byte("\n"))
}

// upstreamTight tells whether the entry's UpstreamKey member was written
// with no space after its colon, in val (the entry's text).
func upstreamTight(entry object, val []byte) bool {
	for _, m := range entry {
		if m.Key == UpstreamKey {
			return m.start > 0 && val[m.start-1] == ':'
		}
	}
	return false
}

// runsBailiff tells whether an entry starts bailiff run as init writes
// it: a command named bailiff (or the one init is told to write), "run"
// first among its arguments, and the server's name in its environment.
func runsBailiff(entry object, command string) bool {
	var cmd string
	var args []string
	var env map[string]string
	if json.Unmarshal(entry.get("command"), &cmd) != nil || json.Unmarshal(entry.get("args"), &args) != nil || len(args) == 0 || args[0] != "run" {
		return false
	}
	if e := entry.get("env"); e == nil || json.Unmarshal(e, &env) != nil || env["BAILIFF_SERVER"] == "" {
		return false
	}
	base := cmd[strings.LastIndexAny(cmd, `/\`)+1:]
	return cmd == command || base == "bailiff" || base == "bailiff.exe"
}
