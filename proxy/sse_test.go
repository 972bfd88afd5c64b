package proxy

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

func sseEvents(t *testing.T, in string, max int) ([]sseEvent, time.Duration, error) {
	t.Helper()
	var got []sseEvent
	retry, err := readSSE(strings.NewReader(in), max, func(ev sseEvent) error {
		got = append(got, sseEvent{id: ev.id, data: append([]byte(nil), ev.data...)})
		return nil
	})
	return got, retry, err
}

// TestReadSSE: the event stream grammar as browsers read it: any line
// end, data lines joined, comments and unknown fields skipped, an event
// without data dispatched as nothing, the id kept across events.
func TestReadSSE(t *testing.T) {
	in := ": comment\r\nid: 7\r\nevent: message\r\ndata: {\"a\":\r\ndata:1}\r\n\r\n" +
		"retry: 250\nid: 8\n\n" + // no data: not an event
		"data: two\rdata:  lead\r\r" +
		"data: last-without-blank-line"
	got, retry, err := sseEvents(t, in, 1<<10)
	if !errors.Is(err, io.EOF) {
		t.Fatalf("end of stream: %v, want EOF", err)
	}
	want := []sseEvent{{id: "7", data: []byte("{\"a\":\n1}")}, {id: "8", data: []byte("two\n lead")}}
	if len(got) != len(want) {
		t.Fatalf("events %q, want %q", got, want)
	}
	for i := range want {
		if got[i].id != want[i].id || !bytes.Equal(got[i].data, want[i].data) {
			t.Errorf("event %d: %q %q, want %q %q", i, got[i].id, got[i].data, want[i].id, want[i].data)
		}
	}
	if retry != 250*time.Millisecond {
		t.Errorf("retry %v, want 250ms", retry)
	}
}

// TestReadSSETooLong: a line, or an event's data, longer than the bound
// ends the stream with errTooLong rather than growing without end.
func TestReadSSETooLong(t *testing.T) {
	for name, in := range map[string]string{
		"one line":   "data: " + strings.Repeat("x", 100) + "\n\n",
		"many lines": strings.Repeat("data: "+strings.Repeat("x", 30)+"\n", 5) + "\n",
	} {
		if got, _, err := sseEvents(t, in, 64); !errors.Is(err, errTooLong) || len(got) != 0 {
			t.Errorf("%s: %d events, %v; want none and errTooLong", name, len(got), err)
		}
	}
}

// FuzzReadSSE: any bytes from a server end in events no longer than the
// bound, or an error, never a panic.
func FuzzReadSSE(f *testing.F) {
	f.Add([]byte("id: 1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"id\":1}\n\n"))
	f.Add([]byte("data:\r\rretry: -5\r\n:\n\n"))
	f.Add([]byte("data: a\x00b\nid: \x00\n\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		const max = 256
		_, _ = readSSE(bytes.NewReader(in), max, func(ev sseEvent) error {
			if len(ev.data) > max || len(ev.data) > len(in) {
				t.Fatalf("an event of %d bytes from %d bytes of input, bound %d", len(ev.data), len(in), max)
			}
			return nil
		})
	})
}
