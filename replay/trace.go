// Package replay reads hand-written session traces into per-session
// event streams, which audit's driver takes step by step.
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
	"time"

	"bailiff/engine"
)

// Epoch is the clock of an event without "at": Epoch plus the event's line
// number in seconds, so traces without times still replay the same way.
var Epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// Time is the clock an event is judged at: its "at", or without one
// Epoch plus its line in seconds.
func (ev *Event) Time() time.Time {
	if !ev.At.IsZero() {
		return ev.At
	}
	return Epoch.Add(time.Duration(ev.Line) * time.Second)
}

// maxLine is the longest trace line accepted (tool output can be large).
const maxLine = 256 << 20

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
	// Repin is a tools event's "repin" (tools new to the session are
	// pinned, as the live gateway's relist does).
	Repin bool
	End   bool
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
	engine.ToolRef
	Call  string
	Text  string
	Error bool
	// Channel is the MCP method that carried output other than a
	// tools/call result (resources/read, notifications/message, …); its
	// tool is the channel. Empty for a tool's result.
	Channel string
	// Evidence is the output as an audit log's evidence store keeps it
	// (engine.OutputJSON).
	Evidence []byte
}

// Call is a tools/call.
type Call struct {
	ID       string
	Tool     string
	Args     map[string]any
	Redacted []engine.Path
	Label    string
}

// GrantEvent is a human's answer to an asked call.
type GrantEvent struct {
	ID       string
	Call     string
	Approver string
	Approve  bool
	Expires  time.Time // zero: the policy's approval TTL from the event time
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

// ErrEmptyTrace is a trace with no events. Replaying or recording it would
// print a bare header or write a log of nothing, both of which read as a
// clean session that never happened.
var ErrEmptyTrace = errors.New("empty trace: no session to replay or record")

// emptyTraceError is ErrEmptyTrace, naming the file.
type emptyTraceError struct{ name string }

func (e *emptyTraceError) Error() string {
	return e.name + " is empty: no session to replay or record"
}
func (e *emptyTraceError) Unwrap() error { return ErrEmptyTrace }

// ParseTrace reads a whole trace. name is used in error messages only. A
// trace with no events is ErrEmptyTrace.
func ParseTrace(name string, r io.Reader) ([]Event, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	var events []Event
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		ev, err := parseEvent(b, line)
		if err != nil {
			return nil, &SyntaxError{File: name, Line: line, Reason: err.Error()}
		}
		events = append(events, ev)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, &SyntaxError{File: name, Line: line + 1, Reason: fmt.Sprintf("line longer than %d bytes", maxLine)}
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(events) == 0 {
		return nil, &emptyTraceError{name}
	}
	return events, nil
}
