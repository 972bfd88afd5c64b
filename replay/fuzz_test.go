package replay

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// FuzzParseEvent: no input panics, and every accepted line formats to a
// line that parses back to the same event.
func FuzzParseEvent(f *testing.F) {
	files, _ := filepath.Glob("../fixtures/traces/*/*.jsonl")
	for _, file := range files {
		data, _ := os.ReadFile(file)
		for _, l := range strings.Split(string(data), "\n") {
			if l != "" {
				f.Add([]byte(l))
			}
		}
	}
	f.Add([]byte(`{"call":{"tool":"x","args":{"a":[1,2.5e3,{"b":null}]},"redacted":["a[2].b"],"at":"2026-01-01T00:00:00.5+02:00"}}`))
	f.Add([]byte(`{"tools":{"tools":["a",{"name":"b","inputSchema":{"type":"object"}}],"repin":true,"at":"2026-01-01T00:00:00Z"}}`))
	f.Add([]byte(`{"tools":{"tools":[],"repin":false}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		ev, err := parseEvent(line, 7)
		if err != nil {
			return
		}
		again, err := parseEvent(FormatEvent(ev), 7)
		if err != nil {
			t.Fatalf("formatted event does not parse: %v\n%s", err, FormatEvent(ev))
		}
		if !reflect.DeepEqual(ev, again) {
			t.Fatalf("round trip changed the event:\n%#v\n%#v", ev, again)
		}
	})
}

// TestEventKindsAreTheParsers: the kinds a file is sniffed as a trace by
// are exactly the ones the parser reads.
func TestEventKindsAreTheParsers(t *testing.T) {
	for _, k := range append(slices.Clone(eventKinds), "output2", "Start", "tool", "") {
		_, err := parseEvent([]byte(`{"`+k+`":{}}`), 1)
		unknown := err != nil && strings.Contains(err.Error(), "unknown event")
		if IsEventKind(k) == unknown {
			t.Errorf("%q: IsEventKind %v, parser says %v", k, IsEventKind(k), err)
		}
	}
}
