package replay

import (
	"os"
	"path/filepath"
	"reflect"
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
		ev, err := ParseEvent(line, 7)
		if err != nil {
			return
		}
		again, err := ParseEvent(FormatEvent(ev), 7)
		if err != nil {
			t.Fatalf("formatted event does not parse: %v\n%s", err, FormatEvent(ev))
		}
		if !reflect.DeepEqual(ev, again) {
			t.Fatalf("round trip changed the event:\n%#v\n%#v", ev, again)
		}
	})
}
