// Command genlog writes a large audit log for the verify benchmark: many
// sessions of a mail assistant reading mail and sending it on, recorded
// by the same code as `bailiff record`, so a full verify of it is clean.
//
//	go run ./bench/genlog -size 1073741824 -o bench/out/audit.jsonl
//
// With -session-output, it writes one session holding that much output
// instead (bench/verify-large.sh). With -small, it writes the shape of a
// busy gateway's log: many short sessions, each reading four distinct
// outputs of about 2 KB and sending four mails (bench/verify-small.sh).
// -prefix, -calls and -start shape the logs bench/many.sh and
// bench/growth.sh compare: session ids of their own, sessions of a chosen
// length, and a time of their own.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"bailiff/audit"
	"bailiff/bench/largelog"
	"bailiff/chain"
	"bailiff/engine"
	"bailiff/replay"
)

const policy = `version: 1
rules:
  - {id: read, tool: get_recent_messages, action: allow}
  - {id: send, tool: send_email, action: allow}
tools:
  send_email:
    exfiltrating: true
    sink_params: [to, cc]
    trusted_destinations: ["@corp.example"]
`

func main() {
	size := flag.Int64("size", 1<<30, "stop after the log reaches this many bytes")
	out := flag.String("o", "", "log to write (must not exist)")
	one := flag.Int64("session-output", 0, "instead, write one session with this many bytes of tool output")
	small := flag.Bool("small", false, "write many short sessions of distinct small outputs")
	prefix := flag.String("prefix", "s", "session ids are this and a number: logs meant to be read together need their own")
	perSession := flag.Int("calls", 500, "read-and-send pairs per session (without -small)")
	start := flag.Int("start", 0, "the hour, after 2026-11-01, the first session starts at (one session an hour, or one after another if longer)")
	flag.Parse()
	var err error
	if *one > 0 {
		err = largelog.Write(*out, *one)
	} else {
		err = run(*out, *size, *small, *prefix, *perSession, *start)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "genlog: error: %v\n", err)
		os.Exit(1)
	}
}

func run(out string, size int64, small bool, prefix string, perSession, start int) error {
	if out == "" {
		return fmt.Errorf("-o is required")
	}
	if perSession < 1 {
		return fmt.Errorf("-calls must be at least 1")
	}
	pol, err := engine.Load("bench policy", []byte(policy))
	if err != nil {
		return err
	}
	f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	bw := bufio.NewWriterSize(f, 1<<20)
	cw := &countingWriter{w: bw}
	rec := &audit.Recorder{Policy: pol, Log: chain.NewWriter(cw, chain.None), Evidence: chain.OpenEvidence(chain.EvidenceDir(out))}
	body := strings.Repeat("The quarterly numbers are attached; please review before Friday. ", 5)
	for s := 0; cw.n < size; s++ {
		id := fmt.Sprintf("%s%07d", prefix, s)
		events := []replay.Event{{Line: 1, Start: &replay.Start{Session: id, Server: "mail",
			Principal: engine.Principal{Subject: "ana"}, Tools: []engine.ToolDef{{Name: "get_recent_messages"}, {Name: "send_email"}}}}}
		calls, text := perSession, body
		if small {
			// Distinct in every session, so the store holds each.
			calls, text = 4, fmt.Sprintf("%s %s", id, strings.Repeat(body, 6))
		}
		for c := 0; c < calls; c++ {
			read, send := fmt.Sprintf("r%d", c), fmt.Sprintf("m%d", c)
			inbox := fmt.Sprintf("From: sender%d@mail.example\nSubject: report %d\n%s", c%50, c, text)
			events = append(events,
				replay.Event{Call: &replay.Call{ID: read, Tool: "get_recent_messages", Args: map[string]any{"limit": 5}}},
				replay.Event{Output: &replay.Output{Call: read, Text: inbox, Evidence: engine.OutputJSON(inbox, nil, nil)}},
				replay.Event{Call: &replay.Call{ID: send, Tool: "send_email", Args: map[string]any{
					"to": fmt.Sprintf("colleague%d@corp.example", c%20), "subject": fmt.Sprintf("Re: report %d", c), "text": body}}},
				replay.Event{Output: &replay.Output{Call: send, Text: "Message sent", Evidence: engine.OutputJSON("Message sent", nil, nil)}},
			)
		}
		events = append(events, replay.Event{End: true})
		for i := range events {
			events[i].Line = i + 1
			// A session an hour, or one after another when a session
			// (an event a second) lasts longer.
			span := max(time.Hour, time.Duration(len(events))*time.Second)
			events[i].At = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(start)*time.Hour + time.Duration(s)*span + time.Duration(i)*time.Second)
		}
		if err := rec.Record(id, events); err != nil {
			return err
		}
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return f.Close()
}

type countingWriter struct {
	w interface{ Write([]byte) (int, error) }
	n int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}
