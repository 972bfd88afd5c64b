package verify

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"bailiff/audit"
	"bailiff/chain"
	"bailiff/engine"
	"bailiff/replay"
)

const tenantPolicy = `version: 1
rules:
  - {id: any, tool: "*", action: allow}
tools:
  echo: {cost: 2}
  add: {cost: 0, rate: 2/m, rate_by: tenant}
tenants:
  acme: {ceiling: 5, window: 24h}
`

// tenantLogs records two gateways' logs, one session each, for two
// principals of tenant acme, sharing one ledger as gateways sharing a
// tenant do, with their steps interleaved in time. Session a's second
// echo finds 4 of 5 spent by both; session b's third call finds the
// tenant's two add slots of the minute taken, one by each.
func tenantLogs(t *testing.T) (logs [2][]byte, ev [2]chain.Evidence) {
	t.Helper()
	pol, err := engine.Load("p.yaml", []byte(tenantPolicy))
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	tools := []engine.ToolDef{{Name: "echo"}, {Name: "add"}}
	start := func(id, who string) *replay.Start {
		return &replay.Start{Session: id, Server: "everything", Principal: engine.Principal{Subject: who, Tenant: "acme"}, Tools: tools}
	}
	call := func(id, tool string) *replay.Call {
		return &replay.Call{ID: id, Tool: tool, Args: map[string]any{"message": id}}
	}
	out := func(id string) *replay.Output {
		return &replay.Output{Call: id, Text: "done " + id, Evidence: engine.OutputJSON("done "+id, nil, nil)}
	}
	// Which log each event goes to, in time order.
	steps := []struct {
		log int
		ev  replay.Event
	}{
		{0, replay.Event{Start: start("a", "ana")}},
		{1, replay.Event{Start: start("b", "cy")}},
		{0, replay.Event{Call: call("c1", "echo")}}, // 2 of 5
		{0, replay.Event{Output: out("c1")}},
		{1, replay.Event{Call: call("c1", "echo")}}, // 4 of 5
		{1, replay.Event{Output: out("c1")}},
		{0, replay.Event{Call: call("c2", "echo")}}, // denied: 4 + 2 > 5
		{0, replay.Event{Call: call("c3", "add")}},  // costs nothing; add slot 1
		{0, replay.Event{Output: out("c3")}},
		{1, replay.Event{Call: call("c2", "add")}}, // add slot 2
		{1, replay.Event{Output: out("c2")}},
		{1, replay.Event{Call: call("c3", "add")}}, // denied by the rate
		{0, replay.Event{End: true}},
		{1, replay.Event{End: true}},
	}
	var bufs [2]bytes.Buffer
	ledger := audit.NewLedger()
	var recs [2]*audit.Recorder
	for i := range recs {
		ev[i] = chain.OpenEvidence(t.TempDir())
		recs[i] = &audit.Recorder{Policy: pol, Log: chain.NewWriter(&bufs[i], chain.None), Evidence: ev[i], Ledger: ledger}
	}
	for i, s := range steps {
		e := s.ev
		e.Line, e.At = i+1, at.Add(time.Duration(i)*time.Second)
		if err := recs[s.log].Step(fmt.Sprintf("gw%d", s.log), &e, nil); err != nil {
			t.Fatal(err)
		}
	}
	return [2][]byte{bufs[0].Bytes(), bufs[1].Bytes()}, ev
}

func verifyTogether(t *testing.T, logs [2][]byte, ev [2]chain.Evidence) []*Report {
	t.Helper()
	reps, err := Logs([]Input{
		{Name: "gw0.jsonl", R: bytes.NewReader(logs[0]), Evidence: ev[0]},
		{Name: "gw1.jsonl", R: bytes.NewReader(logs[1]), Evidence: ev[1]},
	}, Options{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	return reps
}

// TestTenantLedgerAcrossLogs: verify rebuilds the tenant's spending and
// rate slots from both logs, merged by time, and agrees with every
// decision; either log alone cannot, and says where it disagrees; a log
// edited (and resealed) to hide one spend is a finding naming the first
// call that disagrees.
func TestTenantLedgerAcrossLogs(t *testing.T) {
	logs, ev := tenantLogs(t)
	for _, want := range []string{
		`"call":"c2","tool":"echo","args":{"message":"c2"},"digest":`,
		`"verdict":"deny","check":"tenant-budget","rule":"any","reason":"tenant \"acme\" has spent 4 of its ceiling 5 this 24h window and this call costs 2; the window resets at 2026-11-02T00:00:00Z"`,
	} {
		if !strings.Contains(string(logs[0]), want) {
			t.Fatalf("gw0 does not hold %s:\n%s", want, logs[0])
		}
	}
	if !strings.Contains(string(logs[1]), `"call":"c3","tool":"add","args":{"message":"c3"},"digest":"sha256:aeca97894992fbd99db57ec62f5fa958420297bea7402358bda82308cb515102","verdict":"deny","check":"rate","rule":"any","reason":"rate 2/m (contract tools.add) for tenant \"acme\": 2 calls in the last minute; the next call may go at 2026-11-01T09:01:07Z"`) {
		t.Fatalf("gw1's third call was not refused by the tenant's rate:\n%s", logs[1])
	}
	for _, rep := range verifyTogether(t, logs, ev) {
		if len(rep.Findings) != 0 || rep.Calls == 0 {
			t.Errorf("%s together: %d calls, findings %+v", rep.File, rep.Calls, rep.Findings)
		}
	}

	// Alone, gw0's refusal rests on spending it does not hold.
	rep, err := Log("gw0.jsonl", bytes.NewReader(logs[0]), ev[0], Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Findings) != 1 || rep.Findings[0].Call != "c2" || rep.Findings[0].Kind != FindVerdict {
		t.Errorf("gw0 alone: findings %+v, want one verdict finding on c2", rep.Findings)
	}

	// gw1's first echo made to look failed (a failed call spends
	// nothing): its own decisions still hold, but gw0's refusal no longer
	// follows, and gw1's own second call would have been allowed.
	hidden := reseal(t, logs[1], func(kind chain.Kind, body []byte) []byte {
		if kind == chain.KindResult && bytes.Contains(body, []byte(`"call":"c1"`)) {
			return bytes.Replace(body, []byte(`"status":"ok"`), []byte(`"status":"error"`), 1)
		}
		return body
	})
	if bytes.Equal(hidden, logs[1]) {
		t.Fatal("the edit changed nothing")
	}
	reps := verifyTogether(t, [2][]byte{logs[0], hidden}, ev)
	if f := reps[0].Findings; len(f) != 1 || f[0].Call != "c2" || f[0].Kind != FindVerdict || !strings.Contains(f[0].Recorded, "deny") {
		t.Errorf("gw0 beside the edited gw1: findings %+v, want one verdict finding on c2", f)
	}
}

// TestCountingSessionsInOneLane: every session under a policy that counts
// across sessions goes to worker 0, whatever its id, so their records are
// taken in the order they are sent; other sessions spread over the
// workers. A lane that let them spread would take a call before the
// spending of another session that came first.
func TestCountingSessionsInOneLane(t *testing.T) {
	logs, ev := tenantLogs(t)
	vs := []*verifier{{file: "gw0", cache: audit.NewCache(ev[0])}, {file: "gw1", cache: audit.NewCache(ev[1])}}
	plain := []byte(strings.Replace(tenantPolicy, "tenants:\n  acme: {ceiling: 5, window: 24h}\n", "", 1))
	plain = []byte(strings.Replace(string(plain), ", rate: 2/m, rate_by: tenant", "", 1))
	pol, err := engine.Load("plain.yaml", plain)
	if err != nil || pol.HasLimits() {
		t.Fatalf("plain policy: %v, limits %v", err, pol != nil && pol.HasLimits())
	}
	p := &pool{chans: make([]chan []item, 8), vs: vs, ordered: (*engine.Policy).HasLimits, quick: true}
	spread := map[int]bool{}
	for i, data := range logs {
		rd := chain.NewReader(bytes.NewReader(data))
		first, err := rd.Next()
		if err != nil || first.Kind != chain.KindSession {
			t.Fatalf("log %d: %v %v", i, err, first.Kind)
		}
		for n := range 40 {
			rec := first
			rec.Session = fmt.Sprintf("s%d", n)
			if w := p.worker(i, rec); w != 0 {
				t.Fatalf("counting session %s of log %d went to worker %d", rec.Session, i, w)
			}
			rec.Kind = chain.KindCall
			if w := p.worker(i, rec); w != 0 {
				t.Fatalf("a call of counting session %s went to worker %d", rec.Session, w)
			}
			// The same session under a policy without limits spreads.
			var b audit.SessionBody
			if err := chain.DecodeBody(first.Body, &b); err != nil {
				t.Fatal(err)
			}
			b.Policy, b.PolicyVersion = string(pol.Canonical()), pol.Version()
			body, err := jsonBody(b)
			if err != nil {
				t.Fatal(err)
			}
			rec = chain.Record{Kind: chain.KindSession, Session: fmt.Sprintf("p%d", n), Body: body}
			spread[p.worker(i, rec)] = true
		}
	}
	if len(spread) < 4 {
		t.Errorf("sessions without limits went to %d of 8 workers", len(spread))
	}
}

// jsonBody is a record body as a session record holds it: the body's
// fields, the policy text escaped within.
func jsonBody(b audit.SessionBody) ([]byte, error) { return json.Marshal(b) }
