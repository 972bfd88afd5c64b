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
	"bailiff/chain"
	"bailiff/engine"
	"bailiff/internal/pgtest"
	"bailiff/replay"
	"bailiff/state"
	"bailiff/verify"
)

const countersPolicy = `version: 1
rules:
  - {id: any, tool: "*", action: allow}
tools:
  echo: {cost: 2}
  add: {cost: 0, rate: 2/h, rate_by: tenant}
tenants:
  acme: {ceiling: 5, window: day, zone: Europe/Berlin}
`

// gatewayLog is one gateway process as the counters see it: its own
// state database handle, ledger and audit log.
type gatewayLog struct {
	rec *audit.Recorder
	buf *bytes.Buffer
	ev  chain.Evidence
	st  *state.Store
}

func openGatewayLog(t *testing.T, db string, pol *engine.Policy) *gatewayLog {
	t.Helper()
	st, err := state.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	g := &gatewayLog{buf: &bytes.Buffer{}, ev: chain.OpenEvidence(t.TempDir()), st: st}
	g.rec = &audit.Recorder{Policy: pol, Log: chain.NewWriter(g.buf, chain.None), Evidence: g.ev,
		Ledger: audit.NewStoredLedger(Counters{Store: st})}
	return g
}

// TestCountersAcrossProcesses: two gateways with their own handles on one
// state database spend one tenant's ceiling and take its rate slots
// together; a third, started after they stopped, starts from what they
// saved. The three logs verify together, and each refusal names the
// figures.
func TestCountersAcrossProcesses(t *testing.T) {
	pol, err := engine.Load("p.yaml", []byte(countersPolicy))
	if err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "state.db")
	gws := []*gatewayLog{openGatewayLog(t, db, pol), openGatewayLog(t, db, pol)}
	at := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	tools := []engine.ToolDef{{Name: "echo"}, {Name: "add"}}
	n := 0
	step := func(g *gatewayLog, e replay.Event) {
		t.Helper()
		n++
		e.Line, e.At = n, at.Add(time.Duration(n)*time.Second)
		if err := g.rec.Step(fmt.Sprintf("gw%p", g), &e, nil); err != nil {
			t.Fatal(err)
		}
	}
	start := func(g *gatewayLog, id, who string) {
		step(g, replay.Event{Start: &replay.Start{Session: id, Server: "everything", Principal: engine.Principal{Subject: who, Tenant: "acme"}, Tools: tools}})
	}
	call := func(g *gatewayLog, id, tool string) {
		step(g, replay.Event{Call: &replay.Call{ID: id, Tool: tool, Args: map[string]any{"message": id}}})
		step(g, replay.Event{Output: &replay.Output{Call: id, Text: "ok", Evidence: engine.OutputJSON("ok", nil, nil)}})
	}
	start(gws[0], "a", "ana")
	start(gws[1], "b", "cy")
	call(gws[0], "c1", "echo") // 2 of 5
	call(gws[1], "c1", "echo") // 4 of 5: a's spending read from the store
	call(gws[0], "c2", "add")  // slot 1
	call(gws[1], "c2", "add")  // slot 2
	step(gws[0], replay.Event{End: true})
	step(gws[1], replay.Event{End: true})

	// A gateway started afresh on the same database.
	gws = append(gws, openGatewayLog(t, db, pol))
	start(gws[2], "c", "di")
	call(gws[2], "c1", "echo")
	call(gws[2], "c2", "add")
	step(gws[2], replay.Event{End: true})
	third := gws[2].buf.String()
	for _, want := range []string{
		`"call":"c1","tool":"echo","args":{"message":"c1"},"digest":"sha256:84662c5d7c5889249c1b92f860136a3cd4a85fcc781f2ed1a18fe24fc921fd46","verdict":"deny","check":"tenant-budget","rule":"any","reason":"tenant \"acme\" has spent 4 of its ceiling 5 this day Europe/Berlin window and this call costs 2; the window resets at 2026-11-01T23:00:00Z"`,
		`"verdict":"deny","check":"rate","rule":"any","reason":"rate 2/h (contract tools.add) for tenant \"acme\": 2 calls in the last hour; the next call may go at 2026-11-01T10:00:0`,
	} {
		if !strings.Contains(third, want) {
			t.Errorf("the restarted gateway did not start from the saved counters: want %s in\n%s", want, third)
		}
	}
	var inputs []verify.Input
	for i, g := range gws {
		inputs = append(inputs, verify.Input{Name: fmt.Sprintf("gw%d.jsonl", i), R: bytes.NewReader(g.buf.Bytes()), Evidence: g.ev})
	}
	reps, err := verify.Logs(inputs, verify.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, rep := range reps {
		if len(rep.Findings) != 0 {
			t.Errorf("%s: %+v", rep.File, rep.Findings)
		}
	}
}

// failingCounters is a state database that fails after a number of reads.
type failingCounters struct {
	Counters
	reads int
}

func (f *failingCounters) CountersSince(v int64) ([]audit.Counter, int64, time.Time, error) {
	if f.reads--; f.reads < 0 {
		return nil, 0, time.Time{}, errors.New("disk I/O error")
	}
	return f.Counters.CountersSince(v)
}

// TestCountersDown: when the shared counters cannot be read, a call is
// refused before anything is decided, never forwarded on a guess; a
// result is still recorded, and every call after it refused.
func TestCountersDown(t *testing.T) {
	pol, err := engine.Load("p.yaml", []byte(countersPolicy))
	if err != nil {
		t.Fatal(err)
	}
	st, err := state.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var buf bytes.Buffer
	fc := &failingCounters{Counters: Counters{Store: st}, reads: 1}
	rec := &audit.Recorder{Policy: pol, Log: chain.NewWriter(&buf, chain.None), Evidence: chain.OpenEvidence(t.TempDir()),
		Ledger: audit.NewStoredLedger(fc)}
	at := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	events := []replay.Event{
		{Start: &replay.Start{Session: "a", Server: "everything", Principal: engine.Principal{Subject: "ana", Tenant: "acme"}, Tools: []engine.ToolDef{{Name: "echo"}}}},
		{Call: &replay.Call{ID: "c1", Tool: "echo", Args: map[string]any{}}},
		{Output: &replay.Output{Call: "c1", Text: "ok", Evidence: engine.OutputJSON("ok", nil, nil)}},
		{Call: &replay.Call{ID: "c2", Tool: "echo", Args: map[string]any{}}},
	}
	var errs []error
	for i := range events {
		events[i].Line, events[i].At = i+1, at.Add(time.Duration(i)*time.Second)
		errs = append(errs, rec.Step("a", &events[i], nil))
	}
	if errs[1] != nil || errs[2] != nil || !errors.Is(errs[3], audit.ErrLedger) {
		t.Fatalf("steps: %v", errs)
	}
	if !strings.Contains(buf.String(), `"kind":"result","call":"c1"`) || strings.Contains(buf.String(), `"call":"c2"`) {
		t.Errorf("the result must be recorded and the refused call not decided:\n%s", buf.String())
	}
}

// TestCountersCorrupt: rows no bailiff writes (a rate of -1 calls, a
// period holding more than any ceiling) refuse the call that would read
// them, and every later one, without a panic and without leaving the
// counters locked: a second gateway on the database is refused too, not
// blocked. A row near the int64 limit must not wrap into an allow.
func TestCountersCorrupt(t *testing.T) {
	pol, err := engine.Load("p.yaml", []byte(countersPolicy))
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range []state.Counter{
		{Tenant: "acme", Counter: "rate tenant -1 3600 tools.add", WindowStart: "2026-11-01T08:00:00.000000000Z", WindowSecs: 3600, Used: 1},
		{Tenant: "acme", Counter: "rate tenant 2 0 tools.add", WindowStart: "2026-11-01T08:00:00.000000000Z", Used: 1},
		{Tenant: "acme", Counter: "cost day Europe/Berlin", WindowStart: "2026-10-31T23:00:00Z", Used: 1<<63 - 2},
		{Tenant: "acme", Counter: "mystery", WindowStart: "x", Used: 1},
	} {
		db := filepath.Join(t.TempDir(), "state.db")
		st, err := state.Open(db)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.SaveCounters(nil, []state.Counter{row}, time.Time{}); err != nil {
			t.Fatal(err)
		}
		st.Close()
		for range 2 {
			g := openGatewayLog(t, db, pol)
			at := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
			events := []replay.Event{
				{Start: &replay.Start{Session: "a", Server: "everything", Principal: engine.Principal{Subject: "ana", Tenant: "acme"}, Tools: []engine.ToolDef{{Name: "echo"}, {Name: "add"}}}},
				{Call: &replay.Call{ID: "c1", Tool: "add", Args: map[string]any{}}},
				{Call: &replay.Call{ID: "c2", Tool: "echo", Args: map[string]any{}}},
			}
			done := make(chan []error, 1)
			go func() {
				var errs []error
				for i := range events {
					events[i].Line, events[i].At = i+1, at.Add(time.Duration(i)*time.Second)
					errs = append(errs, g.rec.Step("a", &events[i], nil))
				}
				done <- errs
			}()
			select {
			case errs := <-done:
				if errs[0] != nil || !errors.Is(errs[1], audit.ErrLedger) || !errors.Is(errs[2], audit.ErrLedger) {
					t.Errorf("row %+v: steps %v, want both calls refused for the counters", row, errs)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("row %+v: the steps hang", row)
			}
			if strings.Contains(g.buf.String(), `"kind":"call"`) {
				t.Errorf("row %+v: a call was decided on counts that could not be read:\n%s", row, g.buf.String())
			}
		}
	}
}

// TestHeadroomFromTheStore: a gateway that has taken no step yet reports
// a tenant's headroom as the shared counters hold it, what the others
// saved, not as its own empty ledger would.
func TestHeadroomFromTheStore(t *testing.T) {
	pol, err := engine.Load("p.yaml", []byte(countersPolicy))
	if err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "state.db")
	g := openGatewayLog(t, db, pol)
	at := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	for i, e := range []replay.Event{
		{Start: &replay.Start{Session: "a", Server: "everything", Principal: engine.Principal{Subject: "ana", Tenant: "acme"}, Tools: []engine.ToolDef{{Name: "echo"}}}},
		{Call: &replay.Call{ID: "c1", Tool: "echo", Args: map[string]any{}}},
		{Output: &replay.Output{Call: "c1", Text: "ok", Evidence: engine.OutputJSON("ok", nil, nil)}},
	} {
		e.Line, e.At = i+1, at.Add(time.Duration(i)*time.Second)
		if err := g.rec.Step("gw", &e, nil); err != nil {
			t.Fatal(err)
		}
	}
	st, err := state.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	fresh := audit.NewStoredLedger(Counters{Store: st})
	got, err := fresh.Headroom(pol, at.Add(time.Minute))
	if err != nil || len(got) != 1 || got[0] != (engine.Headroom{Tenant: "acme", Window: "day Europe/Berlin", Ceiling: 5, Spent: 2}) {
		t.Fatalf("a fresh gateway's headroom: %+v, %v; want acme spent 2 of 5", got, err)
	}
	st.Close()
	if _, err := fresh.Headroom(pol, at); !errors.Is(err, audit.ErrLedger) {
		t.Fatalf("the store closed: %v, want ErrLedger", err)
	}
}

// TestHeadroomDuringSteps: reading the headroom while this process's
// steps run (a scrape of the metrics during calls) neither fails a step
// nor reads through the connection a step holds, on SQLite and
// PostgreSQL.
func TestHeadroomDuringSteps(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { testHeadroomDuringSteps(t, filepath.Join(t.TempDir(), "state.db")) })
	t.Run("postgres", func(t *testing.T) { testHeadroomDuringSteps(t, pgtest.Schema(t)) })
}

func testHeadroomDuringSteps(t *testing.T, db string) {
	pol, err := engine.Load("p.yaml", []byte(countersPolicy))
	if err != nil {
		t.Fatal(err)
	}
	g := openGatewayLog(t, db, pol)
	at := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	n := 0
	step := func(e replay.Event) error {
		n++
		e.Line, e.At = n, at.Add(time.Duration(n)*time.Millisecond)
		return g.rec.Step("gw", &e, nil)
	}
	if err := step(replay.Event{Start: &replay.Start{Session: "a", Server: "everything", Principal: engine.Principal{Subject: "ana", Tenant: "acme"}, Tools: []engine.ToolDef{{Name: "echo"}, {Name: "add"}}}}); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			for {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				if _, err := g.rec.Ledger.Headroom(pol, at); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for i := range 100 {
		id := fmt.Sprint("c", i)
		if err := step(replay.Event{Call: &replay.Call{ID: id, Tool: "add", Args: map[string]any{}}}); err != nil {
			t.Fatalf("call %s while the headroom was read: %v", id, err)
		}
	}
	close(done)
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatalf("headroom read during steps: %v", err)
		}
	}
}
