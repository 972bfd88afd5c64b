package verify

import (
	"bytes"
	"os"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"bailiff/chain"
	"bailiff/internal/fault"
)

// TestWorkerFailureFailsTheRun: a panic while one worker replays one
// call, early, midway or at the last call, fails the whole run with an
// error naming the record, whatever the number of workers. A lost
// failure would report that session's forged verdicts as clean.
func TestWorkerFailureFailsTheRun(t *testing.T) {
	data, ev := benchLog(t, 6)
	rep, err := Log("mail", bytes.NewReader(data), ev, Options{})
	if err != nil || len(rep.Findings) != 0 || rep.Calls == 0 {
		t.Fatalf("without a fault: %v, %+v", err, rep)
	}
	calls := int64(rep.Calls)
	for _, workers := range []int{1, 2, 5} {
		for _, at := range []int64{1, calls / 2, calls} {
			var n atomic.Int64
			restore := fault.Set(func(point, _ string) {
				if point == fault.Decide && n.Add(1) == at {
					panic("injected")
				}
			})
			rep, err := Log("mail", bytes.NewReader(data), ev, Options{Workers: workers})
			restore()
			if err == nil || !strings.Contains(err.Error(), "internal error at record") || rep != nil {
				t.Fatalf("workers %d, panic at call %d of %d: err %v, report %v; want the internal error and no report", workers, at, calls, err, rep)
			}
		}
	}
}

// TestFindingsIndependentOfWorkers: the report, findings and their order
// included, is the same however many workers replay the sessions.
func TestFindingsIndependentOfWorkers(t *testing.T) {
	for _, name := range []string{"fail_forged_verdict", "fail_grant_reused", "fail_args_edited", "fail_evidence_altered"} {
		log := "../fixtures/chain/" + name + ".jsonl"
		data, err := os.ReadFile(log)
		if err != nil {
			t.Fatal(err)
		}
		ev := chain.OpenEvidence(log + ".evidence")
		one, err := Log(name, bytes.NewReader(data), ev, Options{Workers: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(one.Findings) == 0 {
			t.Fatalf("%s: no findings with one worker", name)
		}
		for _, workers := range []int{2, 3, 8} {
			got, err := Log(name, bytes.NewReader(data), ev, Options{Workers: workers})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, one) {
				t.Errorf("%s: %d workers report\n%+v\none worker\n%+v", name, workers, got, one)
			}
		}
	}
}
