package state_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"bailiff/state"
)

// BenchmarkUseGrant is the cost a call allowed by an approval out of
// band pays in the state database: one immediate transaction, fsynced.
func BenchmarkUseGrant(b *testing.B) {
	s, err := state.Open(filepath.Join(b.TempDir(), "state.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ids := make([]string, b.N)
	for i := range ids {
		ids[i] = fmt.Sprintf("g%d", i)
		if err := s.AddAsk(ask(ids[i])); err != nil {
			b.Fatal(err)
		}
		if err := s.Settle(ids[i], t0, &state.Grant{Server: "mail", Tool: "send", Approve: true, Expires: t0.Add(time.Hour), Granted: t0}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := range b.N {
		if err := s.UseGrant(ids[i], "c", t0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCarryable is what every call of a gateway with a state
// database pays to look for approvals of earlier sessions, with n asks
// of other sessions waiting.
func BenchmarkCarryable(b *testing.B) {
	s, err := state.Open(filepath.Join(b.TempDir(), "state.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for i := range 200 {
		if err := s.AddAsk(ask(fmt.Sprintf("old-%d", i))); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for range b.N {
		if _, err := s.Carryable("/var/log/a.jsonl", "ana", "s2"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAnswersVersion is what every call pays when no answer was
// given since its session last looked.
func BenchmarkAnswersVersion(b *testing.B) {
	s, err := state.Open(filepath.Join(b.TempDir(), "state.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for range b.N {
		if _, err := s.AnswersVersion(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBaselineFsync is the floor under any durable write here: four
// hundred bytes appended to a file and fsynced, as the WAL is at a commit.
func BenchmarkBaselineFsync(b *testing.B) {
	f, err := os.Create(filepath.Join(b.TempDir(), "baseline"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 400)
	for range b.N {
		if _, err := f.Write(buf); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
	}
}
