package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestKillNineAskApproveCall: 100 times, a gateway is killed with SIGKILL
// at a random moment of an ask → approve → call sequence, and started
// again on the same log and state database. Each time the sequence is
// finished after the restart, and then: the call reached the server
// exactly once; an approval acknowledged before the kill was not lost
// (the retry after the restart goes through without a new ask, unless
// the log shows a call spent it before the kill); and no approval is used
// twice. At the end the log, a hundred and more sessions none of which
// ended cleanly, verifies.
func TestKillNineAskApproveCall(t *testing.T) {
	r := newRestartRig(t, "version: 1\nrules:\n  - {id: pay, tool: pay, action: ask}\n")
	counter := filepath.Join(r.dir, "paid")
	script, _ := filepath.Abs("testdata/servers/counter.js")
	r.command, r.env = []string{"node", script}, []string{"COUNTER_FILE=" + counter}
	runs := 100
	if testing.Short() {
		runs = 10
	}
	// Each restart is the next run's gateway: a run kills it.
	r.start()
	for run := range runs {
		to := fmt.Sprintf("payee-%d", run)
		// The sequence takes some 30 ms (100 under the race detector):
		// the kill falls anywhere in it, or just after.
		approved := r.killDuring(to, time.Duration(rand.IntN(150))*time.Millisecond)
		r.finish(run, to, approved, counter)
	}
	r.stop()
	var out strings.Builder
	if code := run([]string{"verify", r.audit}, nil, &out, &out); code != 0 {
		t.Fatalf("verify: exit %d\n%s", code, out.String())
	}
}

// killDuring runs ask → approve → call for payee to, and kills the
// gateway after delay, wherever the sequence is. It says whether an
// approval was acknowledged before the kill.
func (r *restartRig) killDuring(to string, delay time.Duration) (approved bool) {
	var wg sync.WaitGroup
	wg.Go(func() {
		time.Sleep(delay)
		r.cmd.Process.Kill()
	})
	args := map[string]any{"to": to}
	text, isErr, err := r.call("pay", args)
	if m := approveID.FindStringSubmatch(text); err == nil && isErr && m != nil {
		r.approve(m[1])
		approved = true
		r.call("pay", args)
	}
	wg.Wait()
	r.stop()
	return approved
}

// finish restarts the gateway and completes the sequence, checking what
// the kill may not have done; the gateway is left running.
func (r *restartRig) finish(run int, to string, approved bool, counter string) {
	r.t.Helper()
	paid := func() int {
		b, _ := os.ReadFile(counter)
		return strings.Count(string(b), `"to":"`+to+`"`)
	}
	landed := paid()
	r.start()
	args := map[string]any{"to": to}
	text, isErr, err := r.call("pay", args)
	if err != nil {
		r.t.Fatalf("run %d: after the restart: %v\n%s", run, err, r.stderr.String())
	}
	m := approveID.FindStringSubmatch(text)
	switch {
	case !isErr && landed > 0:
		r.t.Fatalf("run %d: the call reached the server before the kill and again after it", run)
	case !isErr:
		if !approved {
			r.t.Fatalf("run %d: allowed with no approval given", run)
		}
	case m == nil:
		r.t.Fatalf("run %d: after the restart: %q, want an ask or the call", run, text)
	case landed > 0:
		// Used before the kill: asked again, and left so.
	default:
		if approved && !r.spentInLog(to) {
			r.t.Fatalf("run %d: an approval acknowledged before the kill was lost:\n%s", run, r.stderr.String())
		}
		r.approve(m[1])
		if text, isErr, err := r.call("pay", args); err != nil || isErr {
			r.t.Fatalf("run %d: the approved retry: %q %v\n%s", run, text, err, r.stderr.String())
		}
	}
	if n := paid(); n != 1 {
		r.t.Fatalf("run %d: the call reached the server %d times, want once", run, n)
	}
}

// spentInLog tells whether a call to payee to was recorded allowed by a
// grant: a call the kill interrupted after the gateway decided it spent
// its approval, and the server never heard of it.
func (r *restartRig) spentInLog(to string) bool {
	for _, rec := range readRecords(r.t, r.audit) {
		body := string(rec.Body)
		if rec.Kind == "call" && strings.Contains(body, `"to":"`+to+`"`) && strings.Contains(body, `"verdict":"allow"`) {
			return true
		}
	}
	return false
}
