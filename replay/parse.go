package replay

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"bailiff/engine"
	"bailiff/internal/jsontext"
)

// eventKinds are the one key of a trace line, in the format's order.
var eventKinds = []string{"start", "output", "call", "grant", "tools", "end"}

// IsEventKind tells whether k is the key of a trace line: how a file is
// told to be a trace by its first line. Only replay knows the format.
func IsEventKind(k string) bool { return slices.Contains(eventKinds, k) }

// parseEvent parses one trace line.
func parseEvent(b []byte, line int) (Event, error) {
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
				err = f.only("tools", "repin", "at")
			}
			if err == nil {
				ev.Repin, err = f.boolean("repin")
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
		if err := pf.only("subject", "groups", "scopes", "email", "tenant"); err != nil {
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
		if s.Principal.Email, err = pf.str("email", false); err != nil {
			return err
		}
		if s.Principal.Tenant, err = pf.str("tenant", false); err != nil {
			return err
		}
		if _, given := pm["tenant"]; given && strings.TrimSpace(s.Principal.Tenant) == "" {
			return errors.New("start.principal.tenant is empty: leave it out for the one local tenant, or name the tenant")
		}
		if _, given := pm["email"]; given && s.Principal.Email == "" {
			return errors.New("start.principal.email is empty: leave it out, or give one plain address such as ana@corp.example")
		}
		if err := engine.CheckPrincipalEmail(s.Principal.Email); err != nil {
			return fmt.Errorf("start.principal.email: %v", err)
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
