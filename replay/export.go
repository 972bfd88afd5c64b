package replay

import (
	"time"

	"bailiff/audit"
)

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
