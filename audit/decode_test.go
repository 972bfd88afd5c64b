package audit

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"bailiff/chain"
	"bailiff/engine"
)

// TestDecodeKeepsKind: a record whose body cannot be read is still known
// to be of its kind, so the driver's rules word it as that record (a
// session record that cannot be read is not "a record before any session
// record").
func TestDecodeKeepsKind(t *testing.T) {
	for kind, has := range map[chain.Kind]func(*Event) bool{
		chain.KindSession: func(e *Event) bool { return e.Start != nil },
		chain.KindCall:    func(e *Event) bool { return e.Call != nil },
		chain.KindGrant:   func(e *Event) bool { return e.Grant != nil },
		chain.KindResult:  func(e *Event) bool { return e.Result != nil },
		chain.KindTools:   func(e *Event) bool { return e.Tools != nil },
		chain.KindEnd:     func(e *Event) bool { return e.End != nil },
	} {
		ev, err := decodeOwned(chain.Record{Seq: 3, Session: "s", Kind: kind, Body: []byte(`[1,2]`)})
		if err == nil || !has(&ev) || ev.kind() != string(kind) || ev.Pos != 3 || ev.Session != "s" {
			t.Errorf("%s with a broken body: err %v, kind %q", kind, err, ev.kind())
		}
	}
	if _, err := decodeOwned(chain.Record{Kind: chain.KindCheckpoint}); !errors.Is(err, ErrNoStep) {
		t.Errorf("a checkpoint: %v, want ErrNoStep", err)
	}
}

// TestDecoderReuse: a reusing decoder's event holds only until the next
// record; Decode's own copy holds nothing of the decoder.
func TestDecoderReuse(t *testing.T) {
	buf := new(bytes.Buffer)
	w := chain.NewWriter(buf, chain.None)
	body := func(id string) *CallBody {
		args := map[string]any{"n": id}
		return &CallBody{Call: id, Tool: "send", Args: args, Digest: engine.ArgsDigest(args), Decision: Decision{Verdict: "allow", Check: "rules"}}
	}
	r1, err := w.Append(t0, "s", chain.KindCall, body("c1"))
	if err != nil {
		t.Fatal(err)
	}
	r2, err := w.Append(t0, "s", chain.KindCall, body("c2"))
	if err != nil {
		t.Fatal(err)
	}
	var dec Decoder
	ev, err := dec.Decode(r1)
	if err != nil {
		t.Fatal(err)
	}
	kept := ev.own()
	if _, err := dec.Decode(r2); err != nil {
		t.Fatal(err)
	}
	if kept.Call.Body.Call != "c1" || kept.Call.Call.ID != "c1" || kept.Call.Recorded.Verdict != engine.Allow {
		t.Errorf("the owned copy changed with the next record: %+v", kept.Call.Body)
	}
	if ev.Call.Body.Call != "c2" {
		t.Errorf("the reused event is %q, want the last record's", ev.Call.Body.Call)
	}
}

// TestLoggedGrantExpiresAsWritten: a log's grant whose expiry reads as
// the zero time is not given the policy's TTL in its place, as a
// trace's grant without one is: it has expired.
func TestLoggedGrantExpiresAsWritten(t *testing.T) {
	d, o := driver(t)
	d.Recompute = true
	defer d.Close()
	var decided engine.Decision
	obs := &settleSpy{tally: o, decided: &decided}
	d.Observer = obs
	var ss steps
	ss.add(startStep("a"))
	ss.add(callStep("c1", "pay"))
	asked := engine.Decision{Verdict: engine.Allow, Check: engine.CheckApproval}
	c := call("c1", "pay")
	ss.add(Event{Grant: &GrantStep{ID: "g1", Call: "c1", Approver: "lee", Approve: true, Logged: true, Settled: true, Recorded: &asked,
		Tool: engine.ToolRef{Server: "srv", Tool: "pay"}, Digest: c.Digest, Expires: time.Time{}}})
	if err := drive(d, ss); err != nil {
		t.Fatal(err)
	}
	if decided.Verdict != engine.Deny {
		t.Errorf("a logged grant expiring at the zero time was recomputed %s (%s), want deny", decided.Verdict, decided.Reason)
	}
}

type settleSpy struct {
	*tally
	decided *engine.Decision
}

func (o *settleSpy) Granted(s *Session, ev *Event, pc *Pending, g engine.Grant, settles bool, d, c engine.Decision) error {
	*o.decided = d
	return o.tally.Granted(s, ev, pc, g, settles, d, c)
}

// decodeOwned is Decoder.Decode into storage of its own, for tests that keep an event.
func decodeOwned(rec chain.Record) (Event, error) {
	var dec Decoder
	ev, err := dec.Decode(rec)
	return ev.own(), err
}
