package proxy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestApprovalsRefuseDuplicateKeys: a pending or answer file with a key
// given twice, at the top or nested, is refused. Go would take the last
// value and another reader the first, so the ask a human reads or the
// answer a signature covers would not be the one acted on.
func TestApprovalsRefuseDuplicateKeys(t *testing.T) {
	for name, c := range map[string]struct{ pending, answer, wantList string }{
		"pending, top level": {
			pending:  `{"id":"a1","session":"s1","server":"mail","call":"c1","tool":"send","tool":"delete","args":{},"digest":"d"}`,
			wantList: `a1.json: duplicate key "tool" at byte 68`,
		},
		"pending, nested": {
			pending:  `{"id":"a1","session":"s1","server":"mail","call":"c1","tool":"send","args":{"to":"bob","to":"eve"},"digest":"d"}`,
			wantList: `a1.json: duplicate key "to" at byte 87`,
		},
		"answer, top level": {
			pending: `{"id":"a1","session":"s1","server":"mail","call":"c1","tool":"send","args":{},"digest":"d"}`,
			answer:  `{"id":"a1","answer":"decline","answer":"approve","approver":"lee","signature":{}}`,
		},
		"answer, nested": {
			pending: `{"id":"a1","session":"s1","server":"mail","call":"c1","tool":"send","args":{},"digest":"d"}`,
			answer:  `{"id":"a1","answer":"approve","approver":"lee","signature":{"time":"x","time":"y"}}`,
		},
	} {
		t.Run(name, func(t *testing.T) {
			a := &Approvals{Dir: t.TempDir()}
			write := func(sub, text string) { writeApprovalFile(t, a, sub, "a1", text) }
			write("pending", c.pending)
			if c.answer == "" {
				if _, err := a.List(); err == nil || !strings.HasSuffix(err.Error(), c.wantList) {
					t.Fatalf("List: %v, want an error ending %q", err, c.wantList)
				}
				return
			}
			write("answers", c.answer)
			if ans, ok := a.Answer("a1"); ok {
				t.Fatalf("Answer took %+v from a file with a key given twice", ans)
			}
			// Without the repeat the same answer counts: the refusal is
			// for the duplicate, not for something else in the file.
			fixed := strings.Replace(strings.Replace(c.answer, `"answer":"decline",`, "", 1), `"time":"x",`, "", 1)
			write("answers", fixed)
			if _, ok := a.Answer("a1"); !ok {
				t.Fatalf("Answer refused %s", fixed)
			}
		})
	}
}

// writeApprovalFile writes text as the approvals file id.json under sub
// (pending or answers), as the gateway and bailiff approve would.
func writeApprovalFile(t *testing.T, a *Approvals, sub, id, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(a.Dir, sub), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(a.Dir, sub, id+".json"), []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}
