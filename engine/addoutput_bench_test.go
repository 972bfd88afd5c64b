package engine

import (
	"strings"
	"testing"
)

// BenchmarkAddOutputHostile indexes 512 KiB of output built to make the
// decoders and scanners work hard: entities with and without ';', JSON
// escapes, percent escapes, colons, '+', IPv6 runs, and URLs run together
// ("http://a.bc/http://a.bc/…", once quadratic: 512 KiB took 42 s). Each
// must stay linear in the output; the time is for reading, never asserted.
func BenchmarkAddOutputHostile(b *testing.B) {
	p := mustLoad(b, readersPolicy)
	for _, g := range []struct{ name, unit string }{
		{"ent64", "&#64;"}, {"ent64nosemi", "&#64"}, {"json0040", `\u0040`}, {"pct25", "%25"},
		{"colons", "::"}, {"oneone", "1:"}, {"plus", "a+"}, {"ampsemi", "&amp;"},
		{"v6many", "1::1 "}, {"mixed", `&#37;25&#92;u0040+`}, {"urls", "http://a.bc/"},
	} {
		in := strings.Repeat(g.unit, (512<<10)/len(g.unit))
		b.Run(g.name, func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			for b.Loop() {
				s := NewState("s", "srv", Principal{Subject: "ana"}, []ToolDef{{Name: "send_email"}})
				s.AddOutput(p, Source{Pos: 1, ToolRef: ToolRef{Tool: "read"}}, in)
			}
		})
	}
}
