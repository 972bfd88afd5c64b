// Package largelog writes an audit log with one session holding a given
// amount of tool output, for the memory benchmark (bench/verify-large.sh)
// and the test that holds verify's peak memory to its bound. It records
// through audit.Recorder one event at a time, so writing the log needs
// no more memory than verifying it.
package largelog

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"bailiff/audit"
	"bailiff/chain"
	"bailiff/engine"
	"bailiff/replay"
)

const policy = `version: 1
rules:
  - {id: read, tool: get_recent_messages, action: allow}
  - {id: send, tool: send_email, action: allow}
  - {id: post, tool: post_message, action: allow}
tools:
  send_email:
    exfiltrating: true
    sink_params: [to, cc]
    trusted_destinations: ["@corp.example"]
  post_message:
    exfiltrating: true
    sink_params: [channel]
`

// OutputSize is the size of one read's output: large enough that a
// session of 144 MB is some five hundred results, small enough that one
// is nothing next to the memory bound.
const OutputSize = 256 << 10

var words = strings.Fields(`the quarterly numbers are attached please review before friday
invoice shipment contract renewal budget forecast meeting agenda minutes draft final
customer support ticket escalation priority incident report summary action items owner
deadline schedule calendar travel expense approval policy compliance audit vendor
partner account billing payment transfer reference project milestone release notes`)

// Write writes the log to out (which must not exist) and its evidence
// beside it: one session whose results hold about outputBytes of text.
// Every read is followed by a send to a trusted colleague (decided by the
// trusted list), every eighth by a post to a channel name that must be
// searched for in the whole output (asked: it never appeared), and the
// last by a post to a phrase planted in the first output (denied: it
// did), so verify searches the spilled text and finds the first output.
func Write(out string, outputBytes int64) error {
	pol, err := engine.Load("large-session policy", []byte(policy))
	if err != nil {
		return err
	}
	f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	bw := bufio.NewWriterSize(f, 1<<20)
	rec := &audit.Recorder{Policy: pol, Log: chain.NewWriter(bw, chain.None), Evidence: chain.OpenEvidence(chain.EvidenceDir(out))}
	defer rec.Close()
	r := rand.New(rand.NewPCG(7, 11))
	line := 0
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	step := func(ev replay.Event) error {
		line++
		ev.Line, ev.At = line, at.Add(time.Duration(line)*time.Millisecond)
		return rec.Step(out, &ev, nil)
	}
	const planted = "the-planted-phrase-of-output-one"
	if err := step(replay.Event{Start: &replay.Start{Session: "large", Server: "mail", Principal: engine.Principal{Subject: "ana"},
		Tools: []engine.ToolDef{{Name: "get_recent_messages"}, {Name: "send_email"}, {Name: "post_message"}}}}); err != nil {
		return err
	}
	var b strings.Builder
	var written int64
	for c := 0; written < outputBytes; c++ {
		b.Reset()
		for b.Len() < OutputSize {
			fmt.Fprintf(&b, "From: sender%d@mail%d.example\nSubject: report %d\n", r.IntN(200), r.IntN(20), c)
			for range 40 {
				b.WriteString(words[r.IntN(len(words))])
				b.WriteByte(' ')
			}
			b.WriteString("\n")
			if c == 0 && b.Len() > OutputSize/2 && !strings.Contains(b.String(), planted) {
				b.WriteString(planted + "\n")
			}
		}
		text := b.String()
		written += int64(len(text))
		read, send := fmt.Sprintf("r%d", c), fmt.Sprintf("m%d", c)
		evs := []replay.Event{
			{Call: &replay.Call{ID: read, Tool: "get_recent_messages", Args: map[string]any{"limit": 5}}},
			{Output: &replay.Output{Call: read, Text: text, Evidence: engine.OutputJSON(text, nil, nil)}},
			{Call: &replay.Call{ID: send, Tool: "send_email", Args: map[string]any{"to": fmt.Sprintf("colleague%d@corp.example", c%20), "text": "see above"}}},
		}
		if c%8 == 7 {
			evs = append(evs, replay.Event{Call: &replay.Call{ID: fmt.Sprintf("p%d", c), Tool: "post_message",
				Args: map[string]any{"channel": fmt.Sprintf("ops-room-%04d", c), "text": "done"}}})
		}
		for _, ev := range evs {
			if err := step(ev); err != nil {
				return err
			}
		}
	}
	for _, ev := range []replay.Event{
		{Call: &replay.Call{ID: "last", Tool: "post_message", Args: map[string]any{"channel": planted, "text": "done"}}},
		{End: true},
	} {
		if err := step(ev); err != nil {
			return err
		}
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return f.Close()
}
