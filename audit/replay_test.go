package audit

import (
	"strings"
	"testing"

	"bailiff/engine"
	"bailiff/replay"
)

// TestToolsEventRepin: a tools event with "repin" is the live gateway's
// relist, which pins a tool new to the session; without it the new tool
// stays denied by pinning. "repin" is a boolean, and is written back.
func TestToolsEventRepin(t *testing.T) {
	pol, err := engine.Load("p", []byte("version: 1\nrules:\n  - {id: all, tool: \"*\", action: allow}\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		tools, want string
	}{
		{`{"tools":{"tools":["a","b"]}}`, "deny"},
		{`{"tools":{"repin":true,"tools":["a","b"]}}`, "allow"},
	} {
		trace := `{"start":{"session":"s1","server":"x","tools":["a"]}}` + "\n" + c.tools + "\n" +
			`{"call":{"id":"c1","tool":"b"}}` + "\n"
		events, err := replay.ParseTrace("t.jsonl", strings.NewReader(trace))
		if err != nil {
			t.Fatal(err)
		}
		res, err := Replay(pol, "t.jsonl", events)
		if err != nil {
			t.Fatal(err)
		}
		if got := res[0].Verdict(); got != c.want {
			t.Errorf("%s: call to the new tool is %s, want %s", c.tools, got, c.want)
		}
		if got := string(replay.FormatEvent(events[1])); got != c.tools {
			t.Errorf("written back as %s, want %s", got, c.tools)
		}
	}
	if _, err := replay.ParseTrace("t.jsonl", strings.NewReader(`{"tools":{"tools":[],"repin":"yes"}}`+"\n")); err == nil || !strings.Contains(err.Error(), "tools.repin must be true or false") {
		t.Errorf("a repin that is not a boolean: %v", err)
	}
}

// TestReplayRefusesByStep: a trace's event the driver refuses is a syntax
// error at its line, worded as the step it is.
func TestReplayRefusesByStep(t *testing.T) {
	pol, err := engine.Load("p", []byte("version: 1\nrules:\n  - {id: all, tool: \"*\", action: allow}\n"))
	if err != nil {
		t.Fatal(err)
	}
	for body, want := range map[string]string{
		`{"grant":{"id":"g1","call":"nope","approver":"lee","answer":"approve"}}`: `t.jsonl:2: grant answers call "nope", which session "s1" has not made`,
		`{"output":{"call":"nope","text":"x"}}`:                                   `t.jsonl:2: output answers call "nope", which session "s1" has not made`,
		`{"start":{"session":"s2","server":"x","tools":["a"]}}`:                   `t.jsonl:2: session "s2" starts before session "s1" ended`,
	} {
		trace := `{"start":{"session":"s1","server":"x","tools":["a"]}}` + "\n" + body + "\n"
		events, err := replay.ParseTrace("t.jsonl", strings.NewReader(trace))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Replay(pol, "t.jsonl", events); err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %q", body, err, want)
		}
	}
}
