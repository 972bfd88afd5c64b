package replay

import (
	"time"

	"bailiff/engine"
)

// FormatEvent writes an event as one trace line (without the newline),
// such that parseEvent reads back the same event. Output is written as its
// evidence holds it: text, content blocks and structured content.
func FormatEvent(ev Event) []byte {
	body := map[string]any{}
	kind := ""
	switch {
	case ev.Start != nil:
		kind = "start"
		s := ev.Start
		body["session"], body["server"] = s.Session, s.Server
		pr := map[string]any{"subject": s.Principal.Subject}
		if s.Principal.Groups != nil {
			pr["groups"] = strs(s.Principal.Groups)
		}
		if s.Principal.Scopes != nil {
			pr["scopes"] = strs(s.Principal.Scopes)
		}
		if s.Principal.Email != "" {
			pr["email"] = s.Principal.Email
		}
		body["principal"] = pr
		if s.ToolValues != nil {
			body["tools"] = s.ToolValues
		}
	case ev.Output != nil:
		kind = "output"
		o := ev.Output
		if v, err := engine.DecodeJSON(o.Evidence); err == nil {
			for k, part := range v.(map[string]any) {
				body[k] = part
			}
		}
		put(body, "server", o.Server)
		put(body, "call", o.Call)
		if o.Channel != "" {
			body["channel"] = o.Channel
		} else {
			put(body, "tool", o.Tool)
		}
		if o.Error {
			body["error"] = true
		}
	case ev.Call != nil:
		kind = "call"
		c := ev.Call
		body["id"], body["tool"], body["args"] = c.ID, c.Tool, c.Args
		if c.Redacted != nil {
			var r []any
			for _, p := range c.Redacted {
				r = append(r, p.String())
			}
			body["redacted"] = r
		}
		put(body, "label", c.Label)
	case ev.Grant != nil:
		kind = "grant"
		g := ev.Grant
		body["id"], body["call"], body["approver"] = g.ID, g.Call, g.Approver
		body["answer"] = "decline"
		if g.Approve {
			body["answer"] = "approve"
		}
		if !g.Expires.IsZero() {
			body["expires"] = g.Expires.Format(time.RFC3339Nano)
		}
	case ev.Tools != nil:
		kind = "tools"
		body["tools"] = ev.ToolValues
		if ev.Repin {
			body["repin"] = true
		}
	default:
		kind = "end"
	}
	if !ev.At.IsZero() {
		body["at"] = ev.At.Format(time.RFC3339Nano)
	}
	return engine.CanonicalJSON(map[string]any{kind: body})
}

func put(m map[string]any, k, v string) {
	if v != "" {
		m[k] = v
	}
}

func strs(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}
