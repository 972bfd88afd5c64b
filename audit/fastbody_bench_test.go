package audit

import "testing"

// BenchmarkDecodeFast decodes the call and result bodies of bench/genlog's
// logs, the shape most records of a real log have.
func BenchmarkDecodeFast(b *testing.B) {
	call := []byte(`{"call":"m0","tool":"send_email","args":{"subject":"Re: report 0","text":"The quarterly numbers are attached; please review before Friday. The quarterly numbers are attached; please review before Friday. The quarterly numbers are attached; please review before Friday. ","to":"colleague0@corp.example"},"digest":"sha256:0cd9a8322b86c2777feb6224f5c9b769b2781aaf3cabfd9d97012f46157989ec","verdict":"allow","check":"rules","rule":"send","reason":"rule send: allow"}`)
	result := []byte(`{"call":"r0","server":"mail","tool":"get_recent_messages","status":"ok","content":"sha256:078f254752baa6e17b95c94cafc9963baccfd4a987a7cd3c054076051e107105","size":383}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(call) + len(result)))
	for b.Loop() {
		var c CallBody
		var r ResultBody
		if !c.DecodeFast(call) || !r.DecodeFast(result) {
			b.Fatal("not decoded")
		}
	}
}
