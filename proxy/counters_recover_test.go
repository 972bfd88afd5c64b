package proxy

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"bailiff/audit"
	"bailiff/engine"
	"bailiff/internal/pgtest"
	"bailiff/replay"
	"bailiff/verify"
)

// downCounters is a state database that can be made unreachable: while
// down, the lock and the save fail as a dropped connection would.
type downCounters struct {
	Counters
	down, saveFails bool
	saves, failSave int // the save numbered failSave (from 1) fails
}

var errDown = errors.New("connection refused")

func (d *downCounters) LockCounters() (func(), error) {
	if d.down {
		return nil, errDown
	}
	return d.Counters.LockCounters()
}

func (d *downCounters) SaveCounters(prune, rows []audit.Counter, last time.Time) (int64, error) {
	d.saves++
	if d.down || d.saveFails || d.saves == d.failSave {
		d.saveFails = false
		return 0, errDown
	}
	return d.Counters.SaveCounters(prune, rows, last)
}

// TestCountersRecoverAfterFailedSave: a gateway whose save fails after it
// recorded an allowed call gets ErrUnsaved for that call (the proxy then
// forwards nothing and closes it as failed); while the database is down
// its calls are refused and a result is still recorded; when the
// database is back it serves again by itself. What it spent and gave
// back meanwhile, and the rate slot it took, reach the database with its
// next step, added to what the other gateway spent: the other's
// decisions see exactly the counts the logs rebuild, and the logs verify
// together. On SQLite and on PostgreSQL.
func TestCountersRecoverAfterFailedSave(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { testCountersRecover(t, filepath.Join(t.TempDir(), "state.db")) })
	t.Run("postgres", func(t *testing.T) { testCountersRecover(t, pgtest.Schema(t)) })
}

// TestCountersRefundSavedLate: a failed call's refund whose save fails
// stays this gateway's own until a later step saves it, and the gateway
// counts it meanwhile on top of what it reads of the others: its next
// call is allowed, as the logs merged say it must be.
func TestCountersRefundSavedLate(t *testing.T) {
	pol, err := engine.Load("p.yaml", []byte(countersPolicy))
	if err != nil {
		t.Fatal(err)
	}
	h := newRecoverHarness(t, filepath.Join(t.TempDir(), "state.db"), pol)
	h.must(h.call(0, "c1", "echo")) // 2 of 5
	h.flaky.saveFails = true
	h.result(0, "c1", true)         // 0 of 5, but the store still says 2
	h.must(h.call(1, "c1", "echo")) // the store: 4; the logs: 2
	h.result(1, "c1", false)
	h.must(h.call(0, "c2", "echo")) // the logs: 4 of 5, allowed
	if log := h.gws[0].buf.String(); strings.Contains(log, `"verdict":"deny"`) {
		t.Errorf("c2 was refused on a refund the gateway had not saved yet:\n%s", log)
	}
	h.verify()
}

// recoverHarness is two gateways on one database, the first of which
// reaches it through downCounters.
type recoverHarness struct {
	t     *testing.T
	gws   []*gatewayLog
	flaky *downCounters
	n     int
}

func newRecoverHarness(t *testing.T, db string, pol *engine.Policy) *recoverHarness {
	h := &recoverHarness{t: t, gws: []*gatewayLog{openGatewayLog(t, db, pol), openGatewayLog(t, db, pol)}}
	h.flaky = &downCounters{Counters: Counters{Store: h.gws[0].st}}
	h.gws[0].rec.Ledger = audit.NewStoredLedger(h.flaky)
	for i := range h.gws {
		h.must(h.step(i, replay.Event{Start: &replay.Start{Session: fmt.Sprint("s", i), Server: "everything",
			Principal: engine.Principal{Subject: "ana", Tenant: "acme"}, Tools: []engine.ToolDef{{Name: "echo"}, {Name: "add"}}}}))
	}
	return h
}

var recoverAt = time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)

func (h *recoverHarness) step(gw int, e replay.Event) error {
	h.n++
	e.Line, e.At = h.n, recoverAt.Add(time.Duration(h.n)*time.Second)
	return h.gws[gw].rec.Step(fmt.Sprintf("gw%d", gw), &e, nil)
}

func (h *recoverHarness) must(err error) {
	h.t.Helper()
	if err != nil {
		h.t.Fatal(err)
	}
}

func (h *recoverHarness) call(gw int, id, tool string) error {
	return h.step(gw, replay.Event{Call: &replay.Call{ID: id, Tool: tool, Args: map[string]any{"message": id}}})
}

func (h *recoverHarness) result(gw int, id string, failed bool) {
	h.t.Helper()
	h.must(h.step(gw, replay.Event{Output: &replay.Output{Call: id, Text: "ok", Error: failed, Evidence: engine.OutputJSON("ok", nil, nil)}}))
}

// verify checks the gateways' logs verify together, with no finding.
func (h *recoverHarness) verify() {
	h.t.Helper()
	var inputs []verify.Input
	for i, g := range h.gws {
		inputs = append(inputs, verify.Input{Name: fmt.Sprintf("gw%d.jsonl", i), R: bytes.NewReader(g.buf.Bytes()), Evidence: g.ev})
	}
	reps, err := verify.Logs(inputs, verify.Options{})
	if err != nil {
		h.t.Fatal(err)
	}
	for _, rep := range reps {
		if len(rep.Findings) != 0 {
			h.t.Errorf("%s: %+v", rep.File, rep.Findings)
		}
	}
}

func testCountersRecover(t *testing.T, db string) {
	pol, err := engine.Load("p.yaml", []byte(countersPolicy))
	if err != nil {
		t.Fatal(err)
	}
	h := newRecoverHarness(t, db, pol)
	h.must(h.call(0, "c1", "echo")) // 2 of 5
	h.result(0, "c1", false)

	// The save after c2's record fails: c2 is closed as failed.
	h.flaky.saveFails = true
	if err := h.call(0, "c2", "echo"); !errors.Is(err, audit.ErrUnsaved) {
		t.Fatalf("a call whose save failed: %v, want ErrUnsaved", err)
	}
	h.flaky.down = true
	h.result(0, "c2", true) // taken while down: 2 given back, not saved
	if err := h.call(0, "c3", "echo"); !errors.Is(err, audit.ErrLedger) || errors.Is(err, audit.ErrUnsaved) {
		t.Fatalf("a call while the database is down: %v, want ErrLedger before any decision", err)
	}
	h.must(h.call(1, "c1", "echo")) // 4 of 5: c2 spent nothing in the end
	h.result(1, "c1", false)

	// A rate slot taken in a step whose save failed is saved later.
	h.flaky.down, h.flaky.saveFails = false, true
	if err := h.call(0, "c4", "add"); !errors.Is(err, audit.ErrUnsaved) {
		t.Fatalf("c4: %v, want ErrUnsaved", err)
	}
	h.result(0, "c4", true)         // saved with this step, and with it the slot
	h.must(h.call(1, "c2", "add"))  // the second slot of 2/h
	h.result(1, "c2", false)        //
	h.must(h.call(1, "c3", "add"))  // refused: c4's slot counts
	h.must(h.call(1, "c4", "echo")) // refused: 4 of 5 spent, costs 2
	h.must(h.call(0, "c5", "echo")) // the recovered gateway: refused too
	other := h.gws[1].buf.String()
	for _, want := range []string{
		`"verdict":"deny","check":"rate"`,
		`tenant \"acme\" has spent 4 of its ceiling 5 this day Europe/Berlin window and this call costs 2`,
	} {
		if !strings.Contains(other, want) {
			t.Errorf("the other gateway's log lacks %s:\n%s", want, other)
		}
	}
	if strings.Count(other, `"verdict":"deny"`) != 2 {
		t.Errorf("the other gateway refused %d calls, want 2:\n%s", strings.Count(other, `"verdict":"deny"`), other)
	}
	if first := h.gws[0].buf.String(); !strings.Contains(first, `has spent 4 of its ceiling 5`) {
		t.Errorf("the recovered gateway did not decide c5 on the shared counts:\n%s", first)
	}
	h.verify()
}

// TestCountersClockAhead: a gateway whose clock runs years ahead saves
// that time as the counters' last step; the others refuse their counting
// calls, saying the clocks disagree, rather than stamp their records in
// that future (where no window would reset). A small skew is taken.
func TestCountersClockAhead(t *testing.T) {
	pol, err := engine.Load("p.yaml", []byte(countersPolicy))
	if err != nil {
		t.Fatal(err)
	}
	h := newRecoverHarness(t, filepath.Join(t.TempDir(), "state.db"), pol)
	at := func(gw int, d time.Duration, id string) error {
		e := replay.Event{Line: 100, At: recoverAt.Add(d), Call: &replay.Call{ID: id, Tool: "echo", Args: map[string]any{"message": id}}}
		return h.gws[gw].rec.Step(fmt.Sprintf("gw%d", gw), &e, nil)
	}
	h.must(at(0, 5*time.Second, "c1"))      // a clock 3 s ahead of the other's
	h.must(at(1, 2*time.Second, "c1"))      // taken: stamped just after
	h.must(at(0, 4*365*24*time.Hour, "c2")) // a clock four years ahead
	err = at(1, 10*time.Second, "c2")
	if !errors.Is(err, audit.ErrLedger) || !strings.Contains(err.Error(), "ahead of this machine's clock") {
		t.Fatalf("a step after a clock four years ahead: %v", err)
	}
	if strings.Contains(h.gws[1].buf.String(), `"call":"c2"`) {
		t.Errorf("the refused call was decided:\n%s", h.gws[1].buf.String())
	}
}
