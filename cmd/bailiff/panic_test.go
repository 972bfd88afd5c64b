package main

import (
	"bytes"
	"strings"
	"testing"

	"bailiff/internal/fault"
)

// TestPanicFailsTheRun: a decision that panics, in any session, ends
// verify, shadow and replay with exit 2 and a message, never with a
// result. The log holds a forged verdict, so an "ok" would be a lie.
func TestPanicFailsTheRun(t *testing.T) {
	restore := fault.Set(func(point, tool string) {
		if point == fault.Decide && (tool == "archive_message" || tool == "send_email") {
			panic("injected")
		}
	})
	defer restore()
	log := "../../fixtures/chain/fail_forged_verdict.jsonl"
	for _, args := range [][]string{
		{"verify", log},
		{"shadow", "--candidate", "../../fixtures/policies/main.yaml", log},
		{"replay", "--policy", "../../fixtures/policies/main.yaml", "../../fixtures/traces/main/deny_taint_exact_email.jsonl"},
	} {
		// Many times: a worker that died must fail the run every time,
		// not only when it loses a race with the results.
		for i := 0; i < 20; i++ {
			var out, errb bytes.Buffer
			code := run(args, nil, &out, &errb)
			if code != exitUsage || !strings.Contains(errb.String(), "internal error") {
				t.Fatalf("%v: exit %d, stderr %q, stdout %q; want exit 2 naming the internal error", args, code, errb.String(), out.String())
			}
			if strings.Contains(out.String(), "RESULT") || strings.Contains(out.String(), " ok") {
				t.Fatalf("%v printed a result: %q", args, out.String())
			}
		}
	}
}
