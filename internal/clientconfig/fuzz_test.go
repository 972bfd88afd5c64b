package clientconfig

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzParseObject: no client config panics init's reader, each value is
// found where it lies, and what it accepts writes back to bytes it reads
// the same way.
func FuzzParseObject(f *testing.F) {
	f.Add([]byte(`{"mcpServers":{"fs":{"command":"npx","args":["-y","x"]}},"theme":"dark"}`))
	f.Add([]byte(`{"a":1,"a":2}`))
	f.Add([]byte(`{"a":{"b":[1,{"c":null}]}} trailing`))
	f.Fuzz(func(t *testing.T, data []byte) {
		o, err := parseObject(data)
		if err != nil {
			return
		}
		for _, m := range o {
			// init splices entries by these offsets.
			if !bytes.Equal(data[m.start:m.end], m.Val) {
				t.Fatalf("member %q: bytes %d..%d are %q, not its value %q", m.Key, m.start, m.end, data[m.start:m.end], m.Val)
			}
		}
		enc, _ := o.MarshalJSON()
		o2, err := parseObject(enc)
		if err != nil {
			t.Fatalf("re-encoded object does not parse: %v\n%s", err, enc)
		}
		enc2, _ := o2.MarshalJSON()
		if !bytes.Equal(enc, enc2) {
			t.Fatalf("encoding is not stable:\n%s\n%s", enc, enc2)
		}
	})
}

// FuzzRewriteUndo: whatever config init wraps, the wrapped file is JSON
// that undo turns back into the exact bytes it was given.
func FuzzRewriteUndo(f *testing.F) {
	f.Add([]byte("{\n  \"mcpServers\": {\n    \"fs\": {\n      \"command\": \"npx\",\n      \"args\": [\n        \"-y\"\n      ]\n    }\n  }\n}\n"))
	f.Add([]byte(`{"mcpServers":{"fs":{"command":"npx","args":["-y","x"]},"web":{"url":"https://x.example/mcp"}}}`))
	f.Add([]byte("{\n\t\"mcpServers\": {\n\t\t\"m\": {\n\t\t\t\"command\": \"node\"\n\t\t}\n\t}\n}"))
	f.Add([]byte("{\"mcpServers\": {\"a\": {\n\n  \"command\": \"x\"\n\n}}}"))
	// An entry that closes a level deeper than it opens.
	f.Add([]byte("{\n  \"mcpServers\": {\n    \"a\": {\n      \"command\": \"x\"\n      }\n  }\n}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ch, err := Rewrite(data, Options{Command: "/opt/bailiff", AuditDir: "/logs"})
		if err != nil || len(ch.Changed) == 0 {
			return
		}
		if !json.Valid(ch.Updated) {
			t.Fatalf("the wrapped config is not JSON:\n%s", ch.Updated)
		}
		back, err := Rewrite(ch.Updated, Options{Undo: true})
		if err != nil {
			t.Fatalf("undo refused the wrapped config: %v\n%s", err, ch.Updated)
		}
		if !bytes.Equal(back.Updated, data) {
			t.Fatalf("undo did not give back the exact bytes:\n%q\nwant:\n%q", back.Updated, data)
		}
	})
}
