package audit

import (
	"bytes"
	"testing"
	"time"

	"bailiff/chain"
	"bailiff/engine"
)

// nop observes nothing.
type nop struct{}

func (nop) Started(*Session, *Event) error { return nil }
func (nop) Called(*Session, *Event, engine.Decision, engine.Decision) error {
	return nil
}
func (nop) Granted(*Session, *Event, *Pending, engine.Grant, bool, engine.Decision, engine.Decision) error {
	return nil
}
func (nop) Resulted(*Session, *Event, engine.Source) error { return nil }
func (nop) ToolsListed(*Session, *Event, bool) error       { return nil }
func (nop) Ended(*Session, *Event) error                   { return nil }

// FuzzDecodeAndDrive: records of any kind, body and order, as a tampered
// log holds them, are decoded and driven without a panic: every one is
// taken, refused with an error, or known to be no step.
func FuzzDecodeAndDrive(f *testing.F) {
	f.Add([]byte(`s1{"server":"srv","principal":{"subject":"ana"},"policy_version":"","policy":"","tools":[{"name":"pay"}],"engine":""}
c1{"call":"c1","tool":"pay","args":{"n":"c1"},"digest":"x","decision":{"verdict":"ask","check":"rules","reason":"r"}}
g1{"grant":"g","call":"c1","tool":"pay","digest":"x","approver":"lee","answer":"approve","expires":"2026-12-01T10:00:00.000000000Z","decision":{"verdict":"allow","check":"approval","reason":"r"}}
r1{"call":"c1","server":"srv","tool":"pay","status":"ok"}
t1{"tools":[{"name":"pay"}],"accept":[{"name":"pay"}],"accepted_by":"ana"}
e1{}
c1{"call":"c2","tool":"pay","args":{}}`))
	f.Add([]byte("c9{}\ns9[]\ng9{\"expires\":\"0001-01-01T00:00:00.000000000Z\",\"answer\":\"approve\",\"call\":\"\"}"))
	kinds := map[byte]chain.Kind{'s': chain.KindSession, 't': chain.KindTools, 'c': chain.KindCall, 'g': chain.KindGrant,
		'r': chain.KindResult, 'e': chain.KindEnd, 'k': chain.KindCheckpoint}
	p, err := engine.Load("p", []byte(testPolicy))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d := &Driver{Config: Config{Policy: p}, Interleaved: true, Recompute: true, Observer: nop{}}
		defer d.Close()
		var dec Decoder
		for i, line := range bytes.Split(data, []byte("\n")) {
			if len(line) < 2 {
				continue
			}
			kind, ok := kinds[line[0]]
			if !ok {
				continue
			}
			rec := chain.Record{Seq: int64(i), TS: t0.Add(time.Duration(i) * time.Second), Session: string(line[1:2]), Kind: kind, Body: line[2:]}
			ev, err := dec.Decode(rec)
			if err != nil {
				if ev.kind() != string(kind) && kind != chain.KindCheckpoint {
					t.Fatalf("a %s record decoded as %s", kind, ev.kind())
				}
				continue
			}
			_ = d.Step(ev)
		}
	})
}
