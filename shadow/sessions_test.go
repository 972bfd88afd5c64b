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

// sidesRun drives one session's sides as verify's follower does, over a
// policy that allows send and asks pay: sides are told each step first,
// then the baseline takes it.
type sidesRun struct {
	t    *testing.T
	at   time.Time
	body *audit.SessionBody
	base *audit.Session
	sd   *sides
	n    int
}

func newSidesRun(t *testing.T, cands int, candidate func(*engine.Policy) *engine.Policy, fn func(int, Pair)) *sidesRun {
	t.Helper()
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
	r := &sidesRun{t: t, at: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC),
		body: &audit.SessionBody{Server: "srv", Principal: engine.Principal{Subject: "ana"}, Tools: []engine.ToolDef{{Name: "send"}, {Name: "pay"}}}}
	if r.base, err = audit.Start(audit.Config{Policy: p}, r.at, "s1", r.body); err != nil {
		t.Fatal(err)
	}
	var cs []*engine.Policy
	for range cands {
		cs = append(cs, candidate(p))
	}
	r.sd = newSides(cs, newLedgers(cands), nil, "f", fn)
	r.sd.start(r.at, r.base, r.body)
	return r
}

// call makes the next call, "c1", "c2", ..., of tool and returns its id.
func (r *sidesRun) call(tool string) string {
	r.t.Helper()
	r.n++
	args := map[string]any{"n": r.n}
	c := &engine.Call{ID: fmt.Sprintf("c%d", r.n), ToolRef: engine.ToolRef{Server: "srv", Tool: tool}, Args: args, Digest: engine.ArgsDigest(args)}
	db := r.base.Decide(c, r.at)
	if err := r.sd.call(r.at, r.n, "", c, db); err != nil {
		r.t.Fatal(err)
	}
	if _, err := r.base.Call(r.at, c, db, nil); err != nil {
		r.t.Fatal(err)
	}
	return c.ID
}

// answer approves the asked call id, and returns the grant and what it
// settled the call as.
func (r *sidesRun) answer(id string) (engine.Grant, engine.Decision) {
	r.t.Helper()
	pc, err := r.base.Lookup(id)
	if err != nil {
		r.t.Fatal(err)
	}
	g := engine.Grant{ID: "g-" + id, ToolRef: pc.Call().ToolRef, Digest: pc.Call().Digest, Approve: true, Expires: r.at.Add(time.Hour)}
	d, _ := r.base.Answer(pc, g, r.at)
	if err := r.sd.settle(r.at, id, g, d); err != nil {
		r.t.Fatal(err)
	}
	if err := r.base.Settle(r.at, pc, d, nil); err != nil {
		r.t.Fatal(err)
	}
	return g, d
}

// TestSidesHandOnFinalPairs: a pair is handed on as soon as it and every
// pair before it are final, so a long session holds only the calls since
// its oldest unanswered ask, not its whole history with every call's
// arguments; an answered ask releases what waited behind it, in call
// order, and the session's end hands on the rest.
func TestSidesHandOnFinalPairs(t *testing.T) {
	var got []string
	r := newSidesRun(t, 1, func(p *engine.Policy) *engine.Policy {
		cand, err := p.Without(engine.ParseOff("approval"))
		if err != nil {
			t.Fatal(err)
		}
		return cand
	}, func(_ int, p Pair) { got = append(got, p.ID) })
	sd := r.sd
	held := func(want int, handed ...string) {
		t.Helper()
		if held := len(sd.pairs[0]) - sd.head; held != want || strings.Join(got, " ") != strings.Join(handed, " ") {
			t.Fatalf("%d pairs held, %v handed on; want %d held, %v handed on", held, got, want, handed)
		}
	}
	for range 1000 {
		r.call("send")
		if held := len(sd.pairs[0]) - sd.head; held >= handOnBatch || len(sd.pairs[0]) >= 2*handOnBatch {
			t.Fatalf("after %d allowed calls %d pairs are held in an array of %d", r.n, held, len(sd.pairs[0]))
		}
	}
	sd.flush()
	sd.start(r.at, r.base, r.body)
	if len(got) != 1000 || got[0] != "c1" || got[999] != "c1000" {
		t.Fatalf("%d pairs handed on, from %v to %v", len(got), got[0], got[len(got)-1])
	}
	got = nil
	asked := r.call("pay")
	r.call("send")
	r.call("send")
	held(3)
	g, settled := r.answer(asked)
	held(3) // fewer than a batch: they wait for more, or the end
	var more []string
	for range handOnBatch - 3 {
		more = append(more, r.call("send"))
	}
	held(0, append([]string{"c1001", "c1002", "c1003"}, more...)...)
	if err := sd.settle(r.at, asked, g, settled); err == nil {
		t.Error("an ask settled twice")
	}
	got = nil
	last := r.call("pay")
	after := r.call("send")
	sd.flush()
	held(0, last, after)
}

// TestSidesHandOnLateAnswersLinear: asks answered late, each with a batch
// of calls behind it, are handed on with each pair moved at most about
// once, not all that is held moved again at every answer (which made
// shadow and ablate quadratic on a log a client wrote by answering its
// elicitations late); and every pair goes on once, in call order.
func TestSidesHandOnLateAnswersLinear(t *testing.T) {
	handed := 0
	r := newSidesRun(t, 2, func(p *engine.Policy) *engine.Policy { return p }, func(i int, p Pair) {
		if i == 0 {
			if want := fmt.Sprintf("c%d", handed+1); p.ID != want {
				t.Fatalf("pair %s handed on where %s was due", p.ID, want)
			}
			handed++
		}
	})
	const asks = 200
	var asked []string
	for range asks {
		asked = append(asked, r.call("pay"))
		for range handOnBatch {
			r.call("send")
		}
	}
	for _, id := range asked {
		r.answer(id)
	}
	r.sd.flush()
	if handed != r.n {
		t.Fatalf("%d of %d pairs handed on", handed, r.n)
	}
	if r.sd.moved > r.n {
		t.Errorf("%d pairs moved for %d calls: handing on is not linear", r.sd.moved, r.n)
	}
}
