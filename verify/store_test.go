package verify

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"bailiff/audit"
	"bailiff/chain"
	"bailiff/engine"
	"bailiff/replay"
)

// memStore is an evidence store in memory: what a log reader needs of a
// store is chain.EvidenceStore, not a directory.
type memStore struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (s *memStore) Put(data []byte, _ bool) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := chain.Digest(data)
	s.m[d] = append([]byte(nil), data...)
	return d, nil
}

func (s *memStore) Get(digest string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	data, ok := s.m[digest]
	if !ok {
		return nil, chain.ErrMissing
	}
	if got := chain.Digest(data); got != digest {
		return data, &chain.EvidenceError{Digest: digest, Got: got}
	}
	return data, nil
}

// TestAnyEvidenceStore: a log recorded into a store that is not a
// directory verifies against it, and content lost from it, or altered in
// it, is found, as it is in the directory store.
func TestAnyEvidenceStore(t *testing.T) {
	pol, err := engine.Load("main.yaml", mustRead(t, "../fixtures/policies/main.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	names, _ := filepath.Glob("../fixtures/traces/main/deny_taint_*.jsonl")
	if len(names) == 0 {
		t.Fatal("no taint traces")
	}
	checked := 0
	for _, name := range names {
		data := mustRead(t, name)
		if bytes.Contains(data, []byte(`"grant"`)) {
			continue
		}
		events, err := replay.ParseTrace(name, bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		var log bytes.Buffer
		ev := &memStore{m: map[string][]byte{}}
		rec := &audit.Recorder{Policy: pol, Log: chain.NewWriter(&log, chain.None), Evidence: ev,
			Epoch: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)}
		if err := rec.Record(name, events); err != nil {
			t.Fatal(err)
		}
		if len(ev.m) == 0 {
			continue
		}
		checked++
		rep, err := Log(name, bytes.NewReader(log.Bytes()), ev, Options{})
		if err != nil || len(rep.Findings) != 0 {
			t.Fatalf("%s: %v %+v", name, err, rep)
		}
		for d := range ev.m {
			ev.m[d] = append(ev.m[d], ' ')
			break
		}
		rep, err = Log(name, bytes.NewReader(log.Bytes()), ev, Options{})
		if err != nil || !hasKind(rep, FindEvidence) {
			t.Errorf("%s: altered content not found: %v %+v", name, err, rep)
		}
		for d := range ev.m {
			delete(ev.m, d)
		}
		rep, err = Log(name, bytes.NewReader(log.Bytes()), ev, Options{})
		if err != nil || !hasKind(rep, FindEvidence) || !strings.Contains(rep.Findings[0].Reason, "missing") {
			t.Errorf("%s: lost content not found: %v %+v", name, err, rep)
		}
	}
	if checked < 3 {
		t.Fatalf("only %d traces with output checked", checked)
	}
}

func hasKind(rep *Report, kind string) bool {
	for _, f := range rep.Findings {
		if f.Kind == kind {
			return true
		}
	}
	return false
}

func mustRead(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
