package report

import (
	"fmt"
	"io"
	"strings"
	"testing"

	"bailiff/engine"
	"bailiff/shadow"
)

// BenchmarkShadowListing draws a comparison whose every call changed,
// as bench/shadow.sh's candidate does: the cost per listed call.
func BenchmarkShadowListing(b *testing.B) {
	d := shadow.NewDiff(-1)
	defer d.Close()
	text := strings.Repeat("The quarterly numbers are attached; please review before Friday. ", 5)
	rule := "send" // a variable: the advice test reads Rule: literals as finding kinds
	for i := 0; i < 10000; i++ {
		d.Add(shadow.Pair{File: "bench/out/audit.jsonl", Session: fmt.Sprintf("s%07d", i/8), Pos: i, ID: fmt.Sprintf("m%d", i), Tool: "send_email",
			Baseline:  engine.Decision{Verdict: engine.Allow, Check: engine.CheckRules, Rule: rule},
			Candidate: engine.Decision{Verdict: engine.Ask, Check: engine.CheckTaint, Rule: rule, Reason: fmt.Sprintf("destination to %q is neither trusted nor approved: a human must confirm", fmt.Sprintf("colleague%d@corp.example", i))},
			Args:      map[string]any{"subject": fmt.Sprintf("Re: report %d", i), "text": text, "to": fmt.Sprintf("colleague%d@corp.example", i)}})
	}
	for _, f := range []Format{Table, JSON} {
		b.Run(string(f), func(b *testing.B) {
			for b.Loop() {
				if err := Shadow(io.Discard, f, d, Provenance{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*10000), "ns/call")
		})
	}
}
