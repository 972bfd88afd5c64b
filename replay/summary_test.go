package replay

import (
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"bailiff/chain"
	"bailiff/engine"
)

func addLog(t *testing.T, s *Summary, name, file string) (LogRead, error) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return s.Add(name, f, chain.Evidence{Dir: chain.EvidenceDir(file)})
}

// TestSummary: an answered ask counts by its answer, each tool keeps its
// session's server, and one session in two logs is refused.
func TestSummary(t *testing.T) {
	const mail = "../fixtures/chain/good_mail.jsonl"
	s := NewSummary(time.Time{}, time.Time{})
	read, err := addLog(t, s, "a", mail)
	if err != nil || read.Err != nil || !read.HasOutput {
		t.Fatalf("Add = %+v, %v", read, err)
	}
	if s.Sessions != 2 || s.Calls != 10 {
		t.Errorf("sessions %d, calls %d; want 2, 10", s.Sessions, s.Calls)
	}
	if got, want := s.ByTool["send_email"], map[string]int{"allow": 2, "deny": 2, "ask": 0}; !reflect.DeepEqual(got, want) {
		t.Errorf("send_email verdicts = %v, want %v", got, want)
	}
	if got, want := s.Asks, map[string]int{"approved": 1, "declined": 1, "unanswered": 2}; !reflect.DeepEqual(got, want) {
		t.Errorf("asks = %v, want %v", got, want)
	}
	if got := s.ToolServers["send_email"]; !reflect.DeepEqual(got, map[string]bool{"mail": true}) {
		t.Errorf("send_email servers = %v, want mail", got)
	}
	if _, ok := s.Policies[s.LastPolicy]; !ok || len(s.Policies) != 1 {
		t.Errorf("last policy %q not among %d policies", s.LastPolicy, len(s.Policies))
	}
	if _, err := addLog(t, s, "b", mail); err == nil || !strings.Contains(err.Error(), "is in both a and b") {
		t.Errorf("the same sessions in a second log: err = %v", err)
	}
}

// TestSummaryOutOfRange: sessions outside the period are read, not
// described.
func TestSummaryOutOfRange(t *testing.T) {
	s := NewSummary(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC), time.Time{})
	if _, err := addLog(t, s, "a", "../fixtures/chain/good_mail.jsonl"); err != nil {
		t.Fatal(err)
	}
	if s.Read != 2 || s.Sessions != 0 || s.Calls != 0 || len(s.Policies) != 0 || s.SpanFirst.IsZero() {
		t.Errorf("read %d, sessions %d, calls %d, policies %d, span from %v", s.Read, s.Sessions, s.Calls, len(s.Policies), s.SpanFirst)
	}
}

// TestSummaryFixed: the summary keeps which argument paths each tool's
// pinned schema fixes, under the tool's own name in a gateway session.
func TestSummaryFixed(t *testing.T) {
	pol, err := engine.Load("p.yaml", []byte("version: 1\nrules: []\n"))
	if err != nil {
		t.Fatal(err)
	}
	s := NewSummary(time.Time{}, time.Time{})
	fixed := map[string][]string{"channel": {"a"}, "cc[*]": {"b"}}
	s.session(LogSession{Policy: pol, Events: []Event{
		{Start: &Start{Session: "s", Server: "gateway", Tools: []engine.ToolDef{{Name: "shop.refund", Fixed: fixed}, {Name: "mail.send"}}}},
		{Call: &Call{ID: "c", Server: "shop", Tool: "refund"}},
	}})
	if got := s.Fixed["refund"]["shop"]; !reflect.DeepEqual(got, fixed) {
		t.Errorf("fixed paths of refund: %v", got)
	}
	if _, ok := s.Fixed["send"]; ok {
		t.Errorf("send fixes nothing, yet %v", s.Fixed["send"])
	}
}
