package engine

import (
	"strconv"
	"testing"
	"time"
)

// FuzzLimits drives sessions of three principals of two tenants through a
// day of calls at times, tools and failures the fuzzer picks, under a
// daily ceiling in a zone with a daylight-saving change and two rates,
// and holds the engine to what the checks promise: the same decision
// twice, never an internal error, no period spent past its ceiling, and
// no rate's window holding more calls than it allows.
func FuzzLimits(f *testing.F) {
	p := mustLoad(f, `version: 1
rules:
  - {id: mail, tool: send, action: allow, rate: 3/m, rate_by: tenant}
  - {id: any, tool: "*", action: allow}
tools:
  fetch: {cost: 3}
  free: {cost: 0}
  add: {rate: 2/s}
tenants:
  acme: {ceiling: 10, window: day, zone: America/New_York}
  "*": {ceiling: 4, window: 90m}
`)
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
	f.Add([]byte{255, 254, 0, 0, 0, 17, 33, 65, 129, 3, 3, 3, 3})
	f.Fuzz(func(t *testing.T, ops []byte) {
		l := NewLedger()
		who := []Principal{{Subject: "ana", Tenant: "acme"}, {Subject: "cy", Tenant: "acme"}, {Subject: "di", Tenant: "globex"}}
		tools := []string{"fetch", "free", "add", "send", "echo"}
		var states []*State
		for _, w := range who {
			s := NewState("s-"+w.Subject, "srv", w, []ToolDef{{Name: "fetch"}, {Name: "free"}, {Name: "add"}, {Name: "send"}, {Name: "echo"}})
			s.ShareLedger(l)
			states = append(states, s)
		}
		// New York springs forward on 2026-03-08 at 07:00Z.
		now := time.Date(2026, 3, 8, 3, 0, 0, 0, time.UTC)
		sent := map[string][]time.Time{} // rate key -> allowed call times
		for i := 0; i+1 < len(ops); i += 2 {
			op, arg := ops[i], ops[i+1]
			now = now.Add(time.Duration(arg) * time.Duration(1+op%5) * 7 * time.Second)
			s := states[int(op)%len(states)]
			c := &Call{ID: "c" + strconv.Itoa(i), ToolRef: ToolRef{Server: "srv", Tool: tools[int(op/3)%len(tools)]}, Args: map[string]any{}}
			c.Digest = ArgsDigest(c.Args)
			d := Decide(p, s, c, now)
			if again := Decide(p, s, c, now); again.Verdict != d.Verdict || again.Reason != d.Reason {
				t.Fatalf("not deterministic: %+v then %+v", d, again)
			}
			if d.Check == CheckInternal || d.Verdict == Ask {
				t.Fatalf("decision %+v", d)
			}
			s.Apply(p, c, d, now)
			if d.Verdict == Allow {
				key := c.Tool
				if c.Tool == "send" {
					key = "send:" + s.Principal.Tenant
				} else if c.Tool == "add" {
					key = "add:" + s.Principal.Subject
				}
				sent[key] = append(sent[key], now)
				if op%7 == 0 {
					s.Failed(c.ID, now)
				}
			}
		}
		for _, sp := range l.Spending() {
			ceiling := int64(4)
			if sp.Tenant == "acme" {
				ceiling = 10
			}
			if sp.Spent > ceiling || sp.Spent < 0 {
				t.Fatalf("%s spent %d in the period from %s, ceiling %d", sp.Tenant, sp.Spent, sp.Start, ceiling)
			}
		}
		for key, times := range sent {
			n, per := 0, time.Duration(0)
			switch key[:3] {
			case "sen":
				n, per = 3, time.Minute
			case "add":
				n, per = 2, time.Second
			default:
				continue
			}
			for i := range times {
				if i+n < len(times) && times[i+n].Sub(times[i]) < per {
					t.Fatalf("%s: %d calls within %s from %s", key, n+1, per, times[i])
				}
			}
		}
	})
}
