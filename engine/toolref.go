package engine

import (
	"fmt"
	"strings"
)

// ToolRef names one tool on one server. Budgets are counted per ToolRef,
// so two servers behind one gateway that expose the same tool name never
// spend each other's calls.
type ToolRef struct {
	Server string
	Name   string
}

// Ref is the tool a call names, on the server it names ("" for the
// session's own).
func (c *Call) Ref() ToolRef { return ToolRef{Server: c.Server, Name: c.Tool} }

// Ref is the tool a grant is bound to.
func (g Grant) Ref() ToolRef { return ToolRef{Server: g.Server, Name: g.Tool} }

// String is the name a gateway lists the tool under, "<server>.<tool>",
// or the bare name when no server is known.
func (r ToolRef) String() string {
	if r.Server == "" {
		return r.Name
	}
	return r.Server + "." + r.Name
}

// In is the name the tool is known by in a session whose own server is
// session: its bare name on that server, and on any other (a gateway's
// upstream) "<server>.<tool>". Pins, definition approvals and a
// gateway's tools/list all use it.
func (r ToolRef) In(session string) string {
	if r.Server == "" || r.Server == session {
		return r.Name
	}
	return r.String()
}

// ParseToolRef reads a gateway's tool name at its first dot, as the
// gateway routes it: CheckServerName keeps a server name that holds a
// dot from ever being listed, so the first dot is the only reading.
// A name with no dot names no server (ok is false).
func ParseToolRef(name string) (r ToolRef, ok bool) {
	server, tool, ok := strings.Cut(name, ".")
	if !ok {
		return ToolRef{Name: name}, false
	}
	return ToolRef{Server: server, Name: tool}, true
}

// Routable tells whether the tool's listed name reads back as the tool:
// a server name with a dot would be read as another server's tool.
func (r ToolRef) Routable() bool {
	back, _ := ParseToolRef(r.String())
	return r.Server == "" || back == r
}

// CheckServerName is the rule for an upstream's name behind a gateway:
// non-empty, with no dot (tools are routed on the first dot, so server
// "a.b" with tool "c" and server "a" with tool "b.c" would be one name)
// and no whitespace (names are given on command lines and in tables).
func CheckServerName(name string) error {
	if name == "" || !(ToolRef{Server: name, Name: "tool"}).Routable() || strings.ContainsAny(name, " \t\r\n") {
		return fmt.Errorf("server name %q must be non-empty, with no dot or space: tools are routed on the first dot", name)
	}
	return nil
}
