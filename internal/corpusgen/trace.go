package main

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// principal is who the sessions run for: every session is ana's, and
// carries her own address, which trusted_destinations: [principal]
// trusts.
type principal struct {
	Subject string `json:"subject"`
	Email   string `json:"email"`
}

// anaMail is ana's own address: her forms' reply and contact fields.
const anaMail = "ana.ruiz@mailbox.example"

// start is the opening event. A struct, not a map, so the keys come out in
// the order the trace format documents them.
type start struct {
	Session   string    `json:"session"`
	Server    string    `json:"server"`
	Principal principal `json:"principal"`
	Tools     []tool    `json:"tools"`
}

type call struct {
	ID    string         `json:"id"`
	Tool  string         `json:"tool"`
	Args  map[string]any `json:"args"`
	Label string         `json:"label,omitempty"`
}

type output struct {
	Call string `json:"call"`
	Text string `json:"text"`
}

// session collects one session's events. Call ids are numbered in order,
// so the same builder calls always give the same ids.
type session struct {
	id, file string
	events   []map[string]any
	calls    int
	sends    []send
}

// send records what a labelled send went to, for the README's counts.
type send struct {
	label, form, family string
}

func newSession(id, slug string) *session {
	s := &session{id: id, file: id + "_" + slug + ".jsonl"}
	s.events = append(s.events, map[string]any{"start": start{
		Session: id, Server: "desk", Principal: principal{Subject: "ana", Email: anaMail}, Tools: tools(),
	}})
	return s
}

// do adds a call and the output it returned. Reads are left unlabelled:
// only the sends carry a destination, so the scores count sends alone.
func (s *session) do(name string, args map[string]any, text string) {
	id := s.call(name, args, "")
	s.events = append(s.events, map[string]any{"output": output{Call: id, Text: text}})
}

func (s *session) call(name string, args map[string]any, label string) string {
	s.calls++
	id := fmt.Sprintf("c%d", s.calls)
	s.events = append(s.events, map[string]any{"call": call{ID: id, Tool: name, Args: args, Label: label}})
	return id
}

// sendTo adds the labelled send and notes its form and family.
func (s *session) sendTo(name string, args map[string]any, label, form, family string) {
	s.call(name, args, label)
	s.sends = append(s.sends, send{label: label, form: form, family: family})
}

// bytes is the JSONL text. HTML escaping is off so that "Name <addr>"
// reads in the file as the agent wrote it.
func (s *session) bytes() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	for _, e := range s.events {
		if err := enc.Encode(e); err != nil {
			return nil, err
		}
	}
	if err := enc.Encode(map[string]any{"end": struct{}{}}); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
