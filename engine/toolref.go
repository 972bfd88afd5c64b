package engine

import (
	"fmt"
	"strings"
)

// ToolRef names one tool on one server: the one shape a tool's identity
// takes in calls, grants, output sources and result records, which embed
// it (so their JSON keeps its "server" and "tool" keys). Server "" is
// the session's own server until the driver resolves it. Budgets are
// counted per ToolRef, so two servers behind one gateway that expose the
// same tool name never spend each other's calls.
type ToolRef struct {
	Server string `json:"server"`
	Tool   string `json:"tool"`
}

// String is the name a gateway lists the tool under, "<server>.<tool>",
// or the bare name when no server is known.
func (r ToolRef) String() string {
	if r.Server == "" {
		return r.Tool
	}
	return r.Server + "." + r.Tool
}

// In is the name the tool is known by in a session whose own server is
// session: its bare name on that server, and on any other (a gateway's
// upstream) "<server>.<tool>". Pins, definition approvals and a
// gateway's tools/list all use it.
func (r ToolRef) In(session string) string {
	if r.Server == "" || r.Server == session {
		return r.Tool
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
		return ToolRef{Tool: name}, false
	}
	return ToolRef{Server: server, Tool: tool}, true
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
	if name == "" || !(ToolRef{Server: name, Tool: "tool"}).Routable() || strings.ContainsAny(name, " \t\r\n") {
		return fmt.Errorf("server name %q must be non-empty, with no dot or space: tools are routed on the first dot", name)
	}
	return nil
}
