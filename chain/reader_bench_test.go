package chain

import (
	"bytes"
	"fmt"
	"io"
	"testing"
	"time"
)

// BenchmarkReader measures the sequential part of a full verify: reading
// and checking every record's frame, hash and link. "plain" has session
// ids as the gateway makes them; "escaped" ids that take the general
// decoder.
func BenchmarkReader(b *testing.B) {
	const n = 20000
	plain := func(tb testing.TB) []byte {
		var buf bytes.Buffer
		w := NewWriter(&buf, None)
		t0 := time.Date(2026, 11, 3, 9, 0, 0, 0, time.UTC)
		for i := 0; i < n; i++ {
			body := &testCall{Call: fmt.Sprint("c", i), Tool: "send_email", Args: map[string]any{"to": "a@b.example", "n": 1},
				Digest: "sha256:x", testDecision: testDecision{Verdict: "allow", Check: "rule", Reason: "allowed by rule send"}}
			if _, err := w.Append(t0.Add(time.Duration(i)*time.Millisecond), fmt.Sprint("s", i%50), KindCall, body); err != nil {
				tb.Fatal(err)
			}
		}
		return buf.Bytes()
	}
	for _, c := range []struct {
		name string
		data []byte
	}{{"plain", plain(b)}, {"escaped", sample(b, n)}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.data)))
			b.ReportAllocs()
			for b.Loop() {
				rd := NewReader(bytes.NewReader(c.data))
				var err error
				for err == nil {
					_, err = rd.Next()
				}
				if err != io.EOF || rd.Count() != n {
					b.Fatalf("%d records: %v", rd.Count(), err)
				}
			}
		})
	}
}
