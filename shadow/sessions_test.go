package shadow

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"bailiff/audit"
	"bailiff/engine"
	"bailiff/replay"
)

// TestCompareSessionsIsEachCompared: comparing several candidates in one
// pass, over one baseline, gives every candidate exactly the pairs its
// own CompareSession gives, in the same order, on every trace fixture
// (with each check switched off in turn, as ablate does). Sharing the
// baseline's history and the output analysis must change nothing.
func TestCompareSessionsIsEachCompared(t *testing.T) {
	for _, set := range []string{"main", "ask-on-taint"} {
		data, err := os.ReadFile(filepath.Join("..", "fixtures", "policies", set+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		base, err := engine.Load(set+".yaml", data)
		if err != nil {
			t.Fatal(err)
		}
		var cands []*engine.Policy
		for _, c := range []string{"taint", "approval", "budget", "path", "pattern", "pinning", "scopes"} {
			p, err := base.Without(engine.ParseOff(c))
			if err != nil {
				t.Fatal(err)
			}
			cands = append(cands, p)
		}
		files, _ := filepath.Glob(filepath.Join("..", "fixtures", "traces", set, "*.jsonl"))
		if len(files) == 0 {
			t.Fatal("no trace fixtures")
		}
		for _, file := range files {
			f, err := os.Open(file)
			if err != nil {
				t.Fatal(err)
			}
			events, err := replay.ParseTrace(file, f)
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			want := make([][]Pair, len(cands))
			for i, c := range cands {
				evs, _ := replay.ParseTrace(file, mustOpen(t, file))
				if err := CompareSession(base, c, file, audit.TraceSteps(evs), func(p Pair) { want[i] = append(want[i], p) }); err != nil {
					t.Fatal(err)
				}
			}
			got := make([][]Pair, len(cands))
			if err := compareSessions(base, cands, nil, file, audit.TraceSteps(events), func(i int, p Pair) {
				got[i] = append(got[i], p)
			}); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s: one pass gives\n%+v\nseparate passes\n%+v", file, got, want)
			}
		}
	}
}

func mustOpen(t *testing.T, file string) *os.File {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// TestSidesHandOnFinalPairs: a pair is handed on as soon as it and every
// pair before it are final, so a long session holds only the calls since
// its oldest unanswered ask, not its whole history with every call's
// arguments; an answered ask releases what waited behind it, in call
// order, and the session's end hands on the rest.
func TestSidesHandOnFinalPairs(t *testing.T) {
	p, err := engine.Load("p", []byte(`version: 1
name: sides
rules:
  - id: send
    tool: send
    action: allow
  - id: pay
    tool: pay
    action: ask
`))
	if err != nil {
		t.Fatal(err)
	}
	cand, err := p.Without(engine.ParseOff("approval"))
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	body := &audit.SessionBody{Server: "srv", Principal: engine.Principal{Subject: "ana"}, Tools: []engine.ToolDef{{Name: "send"}, {Name: "pay"}}}
	base, err := audit.Start(audit.Config{Policy: p}, t0, "s1", body)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	sd := newSides([]*engine.Policy{cand}, newLedgers(1), nil, "f", func(_ int, p Pair) { got = append(got, p.ID) })
	sd.start(t0, base, body)
	n := 0
	call := func(tool string) string {
		n++
		args := map[string]any{"n": n}
		c := &engine.Call{ID: fmt.Sprintf("c%d", n), ToolRef: engine.ToolRef{Server: "srv", Tool: tool}, Args: args, Digest: engine.ArgsDigest(args)}
		db := base.Decide(c, t0)
		if err := sd.call(t0, n, "", c, db); err != nil {
			t.Fatal(err)
		}
		if _, err := base.Call(t0, c, db, nil); err != nil {
			t.Fatal(err)
		}
		return c.ID
	}
	held := func(want int, handed ...string) {
		t.Helper()
		if held := len(sd.pairs[0]) - sd.head; held != want || strings.Join(got, " ") != strings.Join(handed, " ") {
			t.Fatalf("%d pairs held, %v handed on; want %d held, %v handed on", held, got, want, handed)
		}
	}
	for range 1000 {
		call("send")
		if held := len(sd.pairs[0]) - sd.head; held >= handOnBatch || len(sd.pairs[0]) >= 2*handOnBatch {
			t.Fatalf("after %d allowed calls %d pairs are held in an array of %d", n, held, len(sd.pairs[0]))
		}
	}
	sd.flush()
	sd.start(t0, base, body)
	if len(got) != 1000 || got[0] != "c1" || got[999] != "c1000" {
		t.Fatalf("%d pairs handed on, from %v to %v", len(got), got[0], got[len(got)-1])
	}
	got = nil
	asked := call("pay")
	call("send")
	call("send")
	held(3)
	g := engine.Grant{ID: "g1", ToolRef: engine.ToolRef{Server: "srv", Tool: "pay"}, Approve: true, Expires: t0.Add(time.Hour)}
	pc, err := base.Lookup(asked)
	if err != nil {
		t.Fatal(err)
	}
	g.Digest = pc.Call().Digest
	settled, _ := base.Answer(pc, g, t0)
	if err := sd.settle(t0, asked, g, settled); err != nil {
		t.Fatal(err)
	}
	held(3) // fewer than a batch: they wait for more, or the end
	var more []string
	for range handOnBatch - 3 {
		more = append(more, call("send"))
	}
	held(0, append([]string{"c1001", "c1002", "c1003"}, more...)...)
	if err := sd.settle(t0, asked, g, settled); err == nil {
		t.Error("an ask settled twice")
	}
	got = nil
	last := call("pay")
	after := call("send")
	sd.flush()
	held(0, last, after)
}

// TestSidesHandOnLateAnswersLinear: asks answered late, each with a batch
// of calls behind it, are handed on with each pair moved at most about
// once, not all that is held moved again at every answer (which made
// shadow and ablate quadratic on a log a client wrote by answering its
// elicitations late); and every pair goes on once, in call order.
func TestSidesHandOnLateAnswersLinear(t *testing.T) {
	p, err := engine.Load("p", []byte(`version: 1
name: sides
rules:
  - id: send
    tool: send
    action: allow
  - id: pay
    tool: pay
    action: ask
`))
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	body := &audit.SessionBody{Server: "srv", Principal: engine.Principal{Subject: "ana"}, Tools: []engine.ToolDef{{Name: "send"}, {Name: "pay"}}}
	base, err := audit.Start(audit.Config{Policy: p}, t0, "s1", body)
	if err != nil {
		t.Fatal(err)
	}
	handed := 0
	sd := newSides([]*engine.Policy{p, p}, newLedgers(2), nil, "f", func(i int, p Pair) {
		if i == 0 {
			if want := fmt.Sprintf("c%d", handed+1); p.ID != want {
				t.Fatalf("pair %s handed on where %s was due", p.ID, want)
			}
			handed++
		}
	})
	sd.start(t0, base, body)
	n := 0
	call := func(tool string) string {
		n++
		args := map[string]any{"n": n}
		c := &engine.Call{ID: fmt.Sprintf("c%d", n), ToolRef: engine.ToolRef{Server: "srv", Tool: tool}, Args: args, Digest: engine.ArgsDigest(args)}
		db := base.Decide(c, t0)
		if err := sd.call(t0, n, "", c, db); err != nil {
			t.Fatal(err)
		}
		if _, err := base.Call(t0, c, db, nil); err != nil {
			t.Fatal(err)
		}
		return c.ID
	}
	const asks = 200
	var asked []string
	for range asks {
		asked = append(asked, call("pay"))
		for range handOnBatch {
			call("send")
		}
	}
	for _, id := range asked {
		pc, err := base.Lookup(id)
		if err != nil {
			t.Fatal(err)
		}
		g := engine.Grant{ID: "g-" + id, ToolRef: pc.Call().ToolRef, Digest: pc.Call().Digest, Approve: true, Expires: t0.Add(time.Hour)}
		d, _ := base.Answer(pc, g, t0)
		if err := sd.settle(t0, id, g, d); err != nil {
			t.Fatal(err)
		}
		if err := base.Settle(t0, pc, d, nil); err != nil {
			t.Fatal(err)
		}
	}
	sd.flush()
	if handed != n {
		t.Fatalf("%d of %d pairs handed on", handed, n)
	}
	if sd.moved > n {
		t.Errorf("%d pairs moved for %d calls: handing on is not linear", sd.moved, n)
	}
}
