package replay

import (
	"time"

	"bailiff/audit"
	"bailiff/engine"
)

// GrantFor binds a trace's grant to the call pc it answers, in session s:
// a grant without an expiry lasts the policy's approval TTL.
func GrantFor(s *audit.Session, pc *audit.Pending, g *GrantEvent, now time.Time) engine.Grant {
	exp := g.Expires
	if exp.IsZero() {
		exp = now.Add(s.Policy().ApprovalTTL())
	}
	c := pc.Call()
	server := c.Server
	if server == "" {
		server = s.State().Server
	}
	return engine.Grant{ID: g.ID, Server: server, Tool: c.Tool, Digest: c.Digest,
		Approver: g.Approver, Approve: g.Approve, Expires: exp}
}

// EventTime is the clock an event is judged at.
func EventTime(ev *Event) time.Time { return eventTime(ev) }

// OutputStatus is the result status an output stands for: another
// channel's error is a JSON-RPC error (there is no isError outside a
// tool result).
func OutputStatus(o *Output) string {
	switch {
	case o.Error && o.Channel != "":
		return audit.StatusFailed
	case o.Error:
		return audit.StatusError
	}
	return audit.StatusOK
}

// Brought is what an output brings the session: its text, unknown text
// when it was purged, or nothing for a result with no content.
func Brought(o *Output) *audit.Output {
	if o.NoContent {
		return nil
	}
	text, known := o.Content()
	return &audit.Output{Text: text, Unknown: !known}
}
