// Package replay reads hand-written session traces (and, later, audit
// logs) back into per-session event streams and drives the engine over
// them, rebuilding each session's state step by step.
//
// A trace is JSONL: one event per line, each a JSON object with exactly
// one key naming its kind (start, output, call, grant, tools, end). The
// format is described in docs/trace-format.md. Start with ParseTrace and Run.
package replay

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"bailiff/engine"
	"bailiff/internal/jsontext"
)

// Epoch is the clock of an event without "at": Epoch plus the event's line
// number in seconds, so traces without times still replay the same way.
var Epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// MaxLine is the longest trace line accepted (tool output can be large).
const MaxLine = 256 << 20

// Event is one parsed trace line. Exactly one of the kind fields is set.
type Event struct {
	Line int
	At   time.Time

	Start  *Start
	Output *Output
	Call   *Call
	Grant  *GrantEvent
	Tools  []engine.ToolDef
	// ToolValues are the tools of a tools event as written.
	ToolValues []any
	// Repin and Accept, read from audit logs only, are a tools record's.
	Repin  bool
	Accept []engine.ToolDef
	// AcceptedBy is who accepted Accept; it is applied only if
	// engine.State.MayAccept allows that approver.
	AcceptedBy string
	End        bool
}

// Start opens a session.
type Start struct {
	Session   string
	Server    string
	Principal engine.Principal
	Tools     []engine.ToolDef
	// ToolValues are the tools as written: names or MCP tool objects.
	ToolValues []any
}

// Output is what a tool returned.
type Output struct {
	Server string
	Tool   string
	Call   string
	Text   string
	Error  bool
	// Channel is the MCP method that carried output other than a
	// tools/call result (resources/read, notifications/message, …); its
	// tool is the channel. Empty for a tool's result.
	Channel string
	// Evidence is the output as an audit log's evidence store keeps it
	// (engine.OutputJSON).
	Evidence []byte
	// Purged, read from audit logs only, means the text is not known;
	// NoContent, a result that refers to no content (a failure).
	Purged, NoContent bool
	// load, for output read from an audit log, reads the text from the
	// evidence store when it is needed rather than when the log is read,
	// so a session's events do not hold all its output at once.
	load func() (string, bool)
}

// Content is the output's text and whether it is known (not purged),
// read from the evidence store if the output came from an audit log.
func (o *Output) Content() (string, bool) {
	if o.load != nil {
		return o.load()
	}
	return o.Text, !o.Purged
}

// Call is a tools/call.
type Call struct {
	ID       string
	Tool     string
	Args     map[string]any
	Redacted []engine.Path
	Label    string

	// Read from audit logs only: the server of a gateway's call, the
	// recorded argument digest, and the recorded decision.
	Server   string
	Digest   string
	Recorded *engine.Decision
}

// GrantEvent is a human's answer to an asked call.
type GrantEvent struct {
	ID       string
	Call     string
	Approver string
	Approve  bool
	Expires  time.Time // zero: the policy's approval TTL from the event time
	// Read from audit logs only: Logged marks a grant from a log, Settled
	// one that settled its call, and Recorded the decision it settled
	// with (a logged grant that did not settle is for a later call).
	Logged   bool
	Settled  bool
	Recorded *engine.Decision
}

// SyntaxError is a trace line that cannot be read.
type SyntaxError struct {
	File   string
	Line   int
	Reason string
	// NeedsKey is the approver whose private key recording a grant
	// needs, when that is what is wrong.
	NeedsKey string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Reason) }

// ErrEmpty is a trace with no events. Replaying or recording it would
// print a bare header or write a log of nothing, both of which read as a
// clean session that never happened.
var ErrEmpty = errors.New("is empty: no session to replay or record")

// ParseTrace reads a whole trace. name is used in error messages only. A
// trace with no events is ErrEmpty.
func ParseTrace(name string, r io.Reader) ([]Event, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), MaxLine)
	var events []Event
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		ev, err := ParseEvent(b, line)
		if err != nil {
			return nil, &SyntaxError{File: name, Line: line, Reason: err.Error()}
		}
		events = append(events, ev)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, &SyntaxError{File: name, Line: line + 1, Reason: fmt.Sprintf("line longer than %d bytes", MaxLine)}
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(events) == 0 {
		return nil, fmt.Errorf("%s %w", name, ErrEmpty)
	}
	return events, nil
}

// ParseEvent parses one trace line.
func ParseEvent(b []byte, line int) (Event, error) {
	ev := Event{Line: line}
	if err := jsontext.CheckText(b); err != nil {
		return ev, fmt.Errorf("not valid text: %v", err)
	}
	v, err := engine.DecodeJSON(b)
	if err != nil {
		return ev, fmt.Errorf("not valid JSON: %v", err)
	}
	top, ok := v.(map[string]any)
	if !ok || len(top) != 1 {
		return ev, errors.New("an event is a JSON object with exactly one key: start, output, call, grant, tools or end")
	}
	for kind, body := range top {
		obj, ok := body.(map[string]any)
		if !ok {
			return ev, fmt.Errorf("%s: the event body must be an object", kind)
		}
		f := fields{kind: kind, m: obj}
		if ev.At, err = f.time("at"); err != nil {
			return ev, err
		}
		switch kind {
		case "start":
			err = parseStart(&ev, f)
		case "output":
			err = parseOutput(&ev, f)
		case "call":
			err = parseCall(&ev, f)
		case "grant":
			err = parseGrant(&ev, f)
		case "tools":
			ev.Tools, ev.ToolValues, err = toolList(f, "tools", true)
			if err == nil {
				err = f.only("tools", "at")
			}
		case "end":
			ev.End = true
			err = f.only("at")
		default:
			err = fmt.Errorf("unknown event %q (want start, output, call, grant, tools or end)", kind)
		}
	}
	return ev, err
}

func parseStart(ev *Event, f fields) error {
	if err := f.only("session", "server", "principal", "tools", "at"); err != nil {
		return err
	}
	s := &Start{}
	var err error
	if s.Session, err = f.str("session", true); err != nil {
		return err
	}
	if s.Server, err = f.str("server", true); err != nil {
		return err
	}
	if pv, ok := f.m["principal"]; ok {
		pm, ok := pv.(map[string]any)
		if !ok {
			return errors.New("start.principal must be an object")
		}
		pf := fields{kind: "start.principal", m: pm}
		if err := pf.only("subject", "groups", "scopes"); err != nil {
			return err
		}
		if s.Principal.Subject, err = pf.str("subject", false); err != nil {
			return err
		}
		if s.Principal.Groups, err = pf.strs("groups"); err != nil {
			return err
		}
		if s.Principal.Scopes, err = pf.strs("scopes"); err != nil {
			return err
		}
	}
	if s.Tools, s.ToolValues, err = toolList(f, "tools", false); err != nil {
		return err
	}
	ev.Start = s
	return nil
}

func toolList(f fields, key string, required bool) ([]engine.ToolDef, []any, error) {
	v, ok := f.m[key]
	if !ok {
		if required {
			return nil, nil, fmt.Errorf("%s needs %q", f.kind, key)
		}
		return nil, nil, nil
	}
	l, ok := v.([]any)
	if !ok {
		return nil, nil, fmt.Errorf("%s.%s must be a list of tool names or tool objects", f.kind, key)
	}
	seen := map[string]bool{}
	out := []engine.ToolDef{}
	for i, t := range l {
		var def engine.ToolDef
		switch t := t.(type) {
		case string:
			if t == "" {
				return nil, nil, fmt.Errorf("%s.%s[%d]: empty tool name", f.kind, key, i)
			}
			def.Name = t
		case map[string]any:
			var err error
			if def, err = engine.ToolFromValue(t); err != nil {
				return nil, nil, fmt.Errorf("%s.%s[%d]: %v", f.kind, key, i, err)
			}
		default:
			return nil, nil, fmt.Errorf("%s.%s[%d]: a tool is a name or an object", f.kind, key, i)
		}
		if seen[def.Name] {
			return nil, nil, fmt.Errorf("%s.%s: tool %q listed twice", f.kind, key, def.Name)
		}
		seen[def.Name] = true
		out = append(out, def)
	}
	return out, l, nil
}

func parseOutput(ev *Event, f fields) error {
	if err := f.only("server", "tool", "call", "channel", "text", "content", "structured", "error", "at"); err != nil {
		return err
	}
	o := &Output{}
	var err error
	if o.Server, err = f.str("server", false); err != nil {
		return err
	}
	if o.Tool, err = f.str("tool", false); err != nil {
		return err
	}
	if o.Call, err = f.str("call", false); err != nil {
		return err
	}
	if o.Channel, err = f.str("channel", false); err != nil {
		return err
	}
	switch {
	case o.Channel == "tools/call":
		o.Channel = "" // what no channel means
	case o.Channel == "":
	case o.Call != "":
		return fmt.Errorf("output.channel %q answers no call: drop \"call\"", o.Channel)
	case o.Tool != "" && o.Tool != o.Channel:
		return fmt.Errorf("output of channel %q: its tool is the channel, not %q", o.Channel, o.Tool)
	default:
		o.Tool = o.Channel
	}
	if o.Tool == "" && o.Call == "" {
		return errors.New("output needs a tool or the call it answers")
	}
	text, err := f.str("text", false)
	if err != nil {
		return err
	}
	content, hasContent := f.m["content"]
	if hasContent {
		if _, ok := content.([]any); !ok {
			return errors.New("output.content must be a list of MCP content blocks")
		}
	}
	o.Text = engine.OutputText(text, content, f.m["structured"])
	o.Evidence = engine.OutputJSON(text, content, f.m["structured"])
	if o.Error, err = f.boolean("error"); err != nil {
		return err
	}
	ev.Output = o
	return nil
}

func parseCall(ev *Event, f fields) error {
	if err := f.only("id", "tool", "args", "redacted", "label", "at"); err != nil {
		return err
	}
	c := &Call{}
	var err error
	if c.ID, err = f.str("id", false); err != nil {
		return err
	}
	if c.ID == "" {
		c.ID = fmt.Sprintf("L%d", ev.Line)
	}
	if c.Tool, err = f.str("tool", true); err != nil {
		return err
	}
	switch a := f.m["args"].(type) {
	case nil:
		c.Args = map[string]any{}
	case map[string]any:
		c.Args = a
	default:
		return errors.New("call.args must be an object")
	}
	red, err := f.strs("redacted")
	if err != nil {
		return err
	}
	for _, r := range red {
		p, err := engine.ParsePath(r)
		if err != nil {
			return fmt.Errorf("call.redacted: %v", err)
		}
		c.Redacted = append(c.Redacted, p)
	}
	if c.Label, err = f.str("label", false); err != nil {
		return err
	}
	if c.Label != "" && c.Label != "attack" && c.Label != "benign" {
		return fmt.Errorf("call.label must be attack or benign, not %q", c.Label)
	}
	ev.Call = c
	return nil
}

func parseGrant(ev *Event, f fields) error {
	if err := f.only("id", "call", "approver", "answer", "expires", "at"); err != nil {
		return err
	}
	g := &GrantEvent{}
	var err error
	if g.ID, err = f.str("id", false); err != nil {
		return err
	}
	if g.ID == "" {
		g.ID = fmt.Sprintf("grant-L%d", ev.Line)
	}
	if g.Call, err = f.str("call", true); err != nil {
		return err
	}
	if g.Approver, err = f.str("approver", false); err != nil {
		return err
	}
	answer, err := f.str("answer", true)
	if err != nil {
		return err
	}
	switch answer {
	case "approve":
		g.Approve = true
	case "decline":
	default:
		return fmt.Errorf("grant.answer must be approve or decline, not %q", answer)
	}
	if g.Expires, err = f.time("expires"); err != nil {
		return err
	}
	ev.Grant = g
	return nil
}

// fields reads typed values out of a decoded event body.
type fields struct {
	kind string
	m    map[string]any
}

func (f fields) only(keys ...string) error {
	for k := range f.m {
		ok := false
		for _, want := range keys {
			ok = ok || k == want
		}
		if !ok {
			return fmt.Errorf("%s: unknown key %q (known: %s)", f.kind, k, strings.Join(keys, ", "))
		}
	}
	return nil
}

func (f fields) str(key string, required bool) (string, error) {
	v, ok := f.m[key]
	if !ok {
		if required {
			return "", fmt.Errorf("%s needs %q", f.kind, key)
		}
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%s.%s must be a string", f.kind, key)
	}
	if required && s == "" {
		return "", fmt.Errorf("%s.%s must not be empty", f.kind, key)
	}
	return s, nil
}

func (f fields) strs(key string) ([]string, error) {
	v, ok := f.m[key]
	if !ok {
		return nil, nil
	}
	l, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%s.%s must be a list of strings", f.kind, key)
	}
	out := make([]string, 0, len(l))
	for _, e := range l {
		s, ok := e.(string)
		if !ok {
			return nil, fmt.Errorf("%s.%s must be a list of strings", f.kind, key)
		}
		out = append(out, s)
	}
	return out, nil
}

func (f fields) boolean(key string) (bool, error) {
	v, ok := f.m[key]
	if !ok {
		return false, nil
	}
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("%s.%s must be true or false", f.kind, key)
	}
	return b, nil
}

func (f fields) time(key string) (time.Time, error) {
	s, err := f.str(key, false)
	if err != nil || s == "" {
		return time.Time{}, err
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s.%s: %q is not an RFC 3339 time", f.kind, key, s)
	}
	return t.UTC(), nil
}
