package clientconfig

import (
	"bytes"
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
