package verify

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"bailiff/audit"
	"bailiff/chain"
	"bailiff/engine"
	"bailiff/replay"
)

const benchPolicy = `version: 1
rules:
  - {id: read, tool: get_recent_messages, action: allow}
  - {id: send, tool: send_email, action: allow}
tools:
  send_email:
    exfiltrating: true
    sink_params: [to, cc]
    trusted_destinations: ["@corp.example"]
`

// benchLog records sessions of a mail assistant reading and sending mail,
// and returns the log and its evidence store.
func benchLog(b testing.TB, sessions int) ([]byte, chain.Evidence) {
	body := strings.Repeat("The quarterly numbers are attached; please review before Friday. ", 5)
	return mailLog(b, sessions, func(int) []replay.Event {
		var events []replay.Event
		for c := 0; c < 200; c++ {
			read, send := fmt.Sprintf("r%d", c), fmt.Sprintf("m%d", c)
			inbox := fmt.Sprintf("From: sender%d@mail.example\nSubject: report %d\n%s", c%50, c, body)
			events = append(events,
				replay.Event{Call: &replay.Call{ID: read, Tool: "get_recent_messages", Args: map[string]any{"limit": 5}}},
				replay.Event{Output: &replay.Output{Call: read, Text: inbox, Evidence: engine.OutputJSON(inbox, nil, nil)}},
				replay.Event{Call: &replay.Call{ID: send, Tool: "send_email", Args: map[string]any{"to": fmt.Sprintf("c%d@corp.example", c%20), "text": body}}},
				replay.Event{Output: &replay.Output{Call: send, Text: "Message sent", Evidence: engine.OutputJSON("Message sent", nil, nil)}})
		}
		return events
	})
}

// mailLog records sessions of the mail assistant under benchPolicy, each
// the calls and outputs calls gives for it between its start and end, and
// returns the log and its evidence store.
func mailLog(b testing.TB, sessions int, calls func(s int) []replay.Event) ([]byte, chain.Evidence) {
	b.Helper()
	pol, err := engine.Load("bench", []byte(benchPolicy))
	if err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	ev := chain.OpenEvidence(b.TempDir())
	rec := &audit.Recorder{Policy: pol, Log: chain.NewWriter(&buf, chain.None), Evidence: ev}
	for s := 0; s < sessions; s++ {
		id := fmt.Sprintf("s%d", s)
		events := []replay.Event{{Start: &replay.Start{Session: id, Server: "mail", Principal: engine.Principal{Subject: "ana"},
			Tools: []engine.ToolDef{{Name: "get_recent_messages"}, {Name: "send_email"}}}}}
		events = append(events, calls(s)...)
		events = append(events, replay.Event{End: true})
		for i := range events {
			events[i].Line = i + 1
			events[i].At = time.Date(2026, 11, 1, s, 0, i, 0, time.UTC)
		}
		if err := rec.Record(id, events); err != nil {
			b.Fatal(err)
		}
	}
	return buf.Bytes(), ev
}

// BenchmarkVerifyFull measures a full verify (integrity and every
// decision recomputed) in bytes of log per second.
func BenchmarkVerifyFull(b *testing.B) {
	data, ev := benchLog(b, 20)
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for b.Loop() {
		rep, err := Log("bench", bytes.NewReader(data), ev, Options{})
		if err != nil || len(rep.Findings) > 0 {
			b.Fatalf("%v %v", err, rep.Findings)
		}
	}
}

// BenchmarkVerifyIntegrity measures the hash-only check.
func BenchmarkVerifyIntegrity(b *testing.B) {
	data, ev := benchLog(b, 20)
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for b.Loop() {
		if _, err := Log("bench", bytes.NewReader(data), ev, Options{IntegrityOnly: true}); err != nil {
			b.Fatal(err)
		}
	}
}
