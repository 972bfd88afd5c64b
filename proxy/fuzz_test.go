package proxy

import (
	"encoding/json"
	"testing"

	"bailiff/engine"
)

// FuzzCallParams: no params panic the reader, and what it accepts is
// exactly what gets forwarded: the name and arguments re-encode to an
// object that reads back to the same call.
func FuzzCallParams(f *testing.F) {
	f.Add([]byte(`{"name":"send_email","arguments":{"to":"a@b.example","n":1.50},"_meta":{"progressToken":1}}`))
	f.Add([]byte(`{"name":"x","arguments":{"path":"a","path":"b"}}`))
	f.Add([]byte(`{"name":"x","Name":"y","arguments":null}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		name, args, meta, err := callParams(json.RawMessage(raw))
		if err != nil {
			return
		}
		fwd := map[string]any{"name": name, "arguments": args}
		if meta != nil {
			fwd["_meta"] = meta
		}
		again, a2, _, err := callParams(engine.CanonicalJSON(fwd))
		if err != nil || again != name || string(engine.CanonicalJSON(a2)) != string(engine.CanonicalJSON(args)) {
			t.Fatalf("forwarded params do not read back to the checked call: %v", err)
		}
	})
}
