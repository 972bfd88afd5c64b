package audit

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"

	"bailiff/chain"
	"bailiff/engine"
)

const testPolicy = `version: 1
name: session-test
rules:
  - id: send
    tool: send
    action: allow
  - id: pay
    tool: pay
    action: ask
tools:
  send:
    max_calls: 1
`

var t0 = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

// failingLog fails every append once armed, as a full disk would.
type failingLog struct {
	*chain.Writer
	fail bool
}

func (l *failingLog) Append(ts time.Time, session string, kind chain.Kind, body any) (chain.Record, error) {
	if l.fail {
		return chain.Record{}, errors.New("disk full")
	}
	return l.Writer.Append(ts, session, kind, body)
}

func start(t *testing.T, log Log) *Session {
	t.Helper()
	p, err := engine.Load("p", []byte(testPolicy))
	if err != nil {
		t.Fatal(err)
	}
	s, err := Start(Config{Policy: p, Log: log}, t0, "s1", &SessionBody{Server: "srv",
		Principal: engine.Principal{Subject: "ana"}, Tools: []engine.ToolDef{{Name: "send"}, {Name: "pay"}}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func call(id, tool string) *engine.Call {
	args := map[string]any{"n": id}
	return &engine.Call{ID: id, ToolRef: engine.ToolRef{Server: "srv", Tool: tool}, Args: args, Digest: engine.ArgsDigest(args)}
}

func records(t *testing.T, log []byte) []chain.Record {
	t.Helper()
	var out []chain.Record
	rd := chain.NewReader(bytes.NewReader(log))
	for {
		rec, err := rd.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rec)
	}
}

// TestStartRecordsThePolicyDecidedUnder: the session record carries the
// policy the session decides with, whatever the caller put in the body.
func TestStartRecordsThePolicyDecidedUnder(t *testing.T) {
	var buf bytes.Buffer
	s := start(t, chain.NewWriter(&buf, chain.None))
	recs := records(t, buf.Bytes())
	var b SessionBody
	if len(recs) != 1 || chain.DecodeBody(recs[0].Body, &b) != nil {
		t.Fatalf("want one session record, got %d", len(recs))
	}
	if b.PolicyVersion != s.Policy().Version() || b.Policy != string(s.Policy().Canonical()) || b.Engine != engine.Version {
		t.Errorf("session record holds policy %s engine %s, want %s %s", b.PolicyVersion, b.Engine, s.Policy().Version(), engine.Version)
	}
}

// TestCallNotWrittenIsNotApplied: a call whose record cannot be written
// spends nothing, so a log that loses a record never holds a state the
// gateway acted on without it.
func TestCallNotWrittenIsNotApplied(t *testing.T) {
	var buf bytes.Buffer
	log := &failingLog{Writer: chain.NewWriter(&buf, chain.None)}
	s := start(t, log)
	c := call("c1", "send")
	d := s.Decide(c, t0)
	log.fail = true
	if _, err := s.Call(t0, c, d, &CallBody{Call: c.ID, Tool: c.Tool, Args: c.Args, Digest: c.Digest}); err == nil {
		t.Fatal("a call whose record failed was made")
	}
	log.fail = false
	if _, err := s.Lookup("c1"); err == nil {
		t.Error("a call whose record failed is known to the session")
	}
	c2 := call("c2", "send")
	if d := s.Decide(c2, t0); d.Verdict != engine.Allow {
		t.Errorf("the budget was spent by a call never recorded: %s by %s", d.Verdict, d.Check)
	}
}

// TestCallRecordCarriesTheCommittedDecision: the record written is the
// decision applied, not whatever the body held.
func TestCallRecordCarriesTheCommittedDecision(t *testing.T) {
	var buf bytes.Buffer
	s := start(t, chain.NewWriter(&buf, chain.None))
	c := call("c1", "send")
	d := s.Decide(c, t0)
	body := &CallBody{Call: c.ID, Tool: c.Tool, Args: c.Args, Digest: c.Digest, Decision: Decision{Verdict: "deny"}}
	if _, err := s.Call(t0, c, d, body); err != nil {
		t.Fatal(err)
	}
	recs := records(t, buf.Bytes())
	var b CallBody
	if err := chain.DecodeBody(recs[1].Body, &b); err != nil {
		t.Fatal(err)
	}
	if b.Verdict != string(engine.Allow) || b.Rule != "send" {
		t.Errorf("recorded %s (%s), want allow (send)", b.Verdict, b.Rule)
	}
	if d := s.Decide(call("c2", "send"), t0); d.Check != engine.CheckBudget {
		t.Errorf("second send: %s by %s, want a budget deny", d.Verdict, d.Check)
	}
	if _, err := s.Call(t0, call("c1", "send"), d, nil); err == nil {
		t.Error("a call id used twice was accepted")
	}
}

// TestAnAskIsSettledOnce: once settled, an ask takes no second answer,
// however it comes.
func TestAnAskIsSettledOnce(t *testing.T) {
	s := start(t, nil)
	c := call("c1", "pay")
	d := s.Decide(c, t0)
	if d.Verdict != engine.Ask {
		t.Fatalf("pay: %s, want ask", d.Verdict)
	}
	pc, err := s.Call(t0, c, d, nil)
	if err != nil {
		t.Fatal(err)
	}
	g := engine.Grant{ID: "g1", ToolRef: engine.ToolRef{Server: "srv", Tool: "pay"}, Digest: c.Digest, Approver: "lee", Approve: true, Expires: t0.Add(time.Hour)}
	got, ok := s.Answer(pc, g, t0)
	if !ok || got.Verdict != engine.Allow {
		t.Fatalf("first answer: %v %s, want allow", ok, got.Verdict)
	}
	if err := s.Settle(t0, pc, got, nil); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Answer(pc, g, t0); ok {
		t.Error("a settled ask was answered again")
	}
}

// TestResults: a failed call gives its budget back, and a result for a
// call the session never made is refused.
func TestResults(t *testing.T) {
	s := start(t, nil)
	c := call("c1", "send")
	if _, err := s.Call(t0, c, s.Decide(c, t0), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Result(t0, 2, &ResultBody{Call: "c1", ToolRef: engine.ToolRef{Tool: "send"}, Status: StatusFailed}, nil); err != nil {
		t.Fatal(err)
	}
	if d := s.Decide(call("c2", "send"), t0); d.Verdict != engine.Allow {
		t.Errorf("after a failed call: %s by %s, want its budget back", d.Verdict, d.Check)
	}
	if _, err := s.Result(t0, 3, &ResultBody{Call: "c9", ToolRef: engine.ToolRef{Tool: "send"}, Status: StatusOK}, nil); err == nil || !strings.Contains(err.Error(), "c9") {
		t.Errorf("a result for a call never made: %v", err)
	}
}

// TestSelfAcceptanceIsNeverWritten: the gateway cannot record the
// principal accepting its own changed definition; read back, the list is
// applied and the acceptance is not.
func TestSelfAcceptanceIsNeverWritten(t *testing.T) {
	var buf bytes.Buffer
	s := start(t, chain.NewWriter(&buf, chain.None))
	body := &ToolsBody{Tools: []engine.ToolDef{{Name: "send", Digest: "sha256:1"}}, Accept: []engine.ToolDef{{Name: "send", Digest: "sha256:1"}}, AcceptedBy: "ana"}
	if err := s.Tools(t0, body); !errors.Is(err, errAcceptRefused) {
		t.Errorf("self-acceptance: %v, want errAcceptRefused", err)
	}
	if n := len(records(t, buf.Bytes())); n != 1 {
		t.Errorf("%d records, want the session record alone", n)
	}
	r := start(t, nil)
	if err := r.Tools(t0, body); !errors.Is(err, errAcceptRefused) {
		t.Errorf("read back: %v, want errAcceptRefused", err)
	}
}

// TestDecideFillsTheDigest: a caller that leaves the digest out still
// gets grants bound to exactly these arguments.
func TestDecideFillsTheDigest(t *testing.T) {
	s := start(t, nil)
	c := call("c1", "pay")
	want := c.Digest
	c.Digest = ""
	d := s.Decide(c, t0)
	if c.Digest != want {
		t.Fatalf("digest %q, want %q", c.Digest, want)
	}
	pc, err := s.Call(t0, c, d, nil)
	if err != nil {
		t.Fatal(err)
	}
	other := engine.Grant{ID: "g", ToolRef: engine.ToolRef{Server: "srv", Tool: "pay"}, Digest: engine.ArgsDigest(map[string]any{"n": "other"}),
		Approver: "lee", Approve: true, Expires: t0.Add(time.Hour)}
	if got, _ := s.Answer(pc, other, t0); got.Verdict == engine.Allow {
		t.Error("a grant for other arguments allowed the call")
	}
}

// syncFile counts fsyncs.
type syncFile struct {
	bytes.Buffer
	syncs int
}

func (f *syncFile) Sync() error { f.syncs++; return nil }

// TestOnlyDecisionsWaitForTheDisk: with sync durability a call record is
// fsynced before the call goes on, and a result is not: it rides the
// next call's fsync (its evidence was synced before it was written).
func TestOnlyDecisionsWaitForTheDisk(t *testing.T) {
	f := &syncFile{}
	s := start(t, chain.NewWriter(f, chain.Sync))
	before := f.syncs
	c := call("c1", "send")
	if _, err := s.Call(t0, c, s.Decide(c, t0), &CallBody{Call: c.ID, Tool: c.Tool, Args: c.Args, Digest: c.Digest}); err != nil {
		t.Fatal(err)
	}
	if f.syncs != before+1 {
		t.Fatalf("call record: %d fsyncs, want 1", f.syncs-before)
	}
	if _, err := s.Result(t0, 0, &ResultBody{Call: "c1", ToolRef: engine.ToolRef{Server: "srv", Tool: "send"}, Status: StatusOK, Content: "sha256:00", Size: 1}, &Output{Text: "ok"}); err != nil {
		t.Fatal(err)
	}
	if f.syncs != before+1 {
		t.Errorf("result record: fsynced on its own")
	}
}

// TestASettledCallLetsGoOfItsArguments: once its result is in, a call's
// arguments are not held for the rest of the session.
func TestASettledCallLetsGoOfItsArguments(t *testing.T) {
	s := start(t, nil)
	c := call("c1", "send")
	pc, err := s.Call(t0, c, s.Decide(c, t0), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Result(t0, 2, &ResultBody{Call: "c1", ToolRef: engine.ToolRef{Tool: "send"}, Status: StatusOK}, nil); err != nil {
		t.Fatal(err)
	}
	kept, err := s.Lookup("c1")
	if err != nil {
		t.Fatal(err)
	}
	if kept.Call().Args != nil || kept.Call().Digest != c.Digest || kept.Call().ToolRef != c.ToolRef || c.Args == nil {
		t.Errorf("after its result: args %v digest %q tool %v (caller's args %v)", kept.Call().Args, kept.Call().Digest, kept.Call().ToolRef, c.Args)
	}
	if kept.Decision().Verdict != pc.Decision().Verdict || kept.Waiting() {
		t.Errorf("after its result: verdict %s waiting %v, want %s and not waiting", kept.Decision().Verdict, kept.Waiting(), pc.Decision().Verdict)
	}
}

// TestSettledCallsAreKeptSmall: a long session keeps every call it made
// (ids are never reused, grants name calls), so a settled call is kept as
// its id, tool, digest and verdict: what is asked of it again, read back
// the same, and a few dozen bytes rather than the hundreds its decoded
// call and decision take.
func TestSettledCallsAreKeptSmall(t *testing.T) {
	s := start(t, nil)
	const n = 20000
	hmac := "hmac-sha256:" + strings.Repeat("ab", 32)
	made := func(i int) *engine.Call {
		c := call(fmt.Sprintf("call-%06d", i), "send")
		if i%7 == 0 {
			c.Digest = hmac // a keyed digest is kept as written
		}
		if i%11 == 0 {
			c.Digest = strings.ToUpper(c.Digest) // and so is any other form
		}
		return c
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range n {
		c := made(i)
		d := engine.Decision{Verdict: engine.Allow, Check: engine.CheckRules, Rule: "send", Reason: fmt.Sprintf("rule send: allow (%d)", i)}
		if _, err := s.Call(t0, c, d, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Result(t0, 2*i+2, &ResultBody{Call: c.ID, ToolRef: engine.ToolRef{Tool: "send"}, Status: StatusOK}, nil); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	perCall := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / n
	t.Logf("%d settled calls: %d bytes each", n, perCall)
	// The session's share is about 110 bytes a call, the engine's
	// forwarded-call index about 90, the ids themselves 16.
	if perCall > 300 {
		t.Errorf("a settled call holds %d bytes; kept whole it held about 500", perCall)
	}
	for _, i := range []int{0, 1, 7, 11, 77, n - 1} {
		want := made(i)
		id := want.ID
		if !s.Made(id) {
			t.Fatalf("%s not made", id)
		}
		if _, err := s.Call(t0, made(i), engine.Decision{Verdict: engine.Allow}, nil); err == nil || !strings.Contains(err.Error(), "used twice") {
			t.Errorf("%s made again: %v", id, err)
		}
		pc, err := s.Lookup(id)
		if err != nil {
			t.Fatal(err)
		}
		got := pc.Call()
		if got.ID != id || got.ToolRef != want.ToolRef || got.Digest != want.Digest || got.Args != nil || pc.Decision().Verdict != engine.Allow || pc.Waiting() {
			t.Errorf("%s read back as %+v, verdict %s", id, *got, pc.Decision().Verdict)
		}
		// A second result (another channel's) finds it, and keeps it again.
		if _, err := s.Result(t0, 3*n+i, &ResultBody{Call: id, ToolRef: engine.ToolRef{Tool: "send"}, Status: StatusOK}, nil); err != nil {
			t.Errorf("a second result for %s: %v", id, err)
		}
	}
	if _, err := s.Lookup("call-999999"); err == nil {
		t.Error("a call never made was found")
	}
}
