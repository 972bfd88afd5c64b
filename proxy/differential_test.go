package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"bailiff/audit"
	"bailiff/chain"
	"bailiff/engine"
	"bailiff/replay"
)

// undriveable are the trace fixtures the live gateway cannot be driven
// through, each for a reason no client or server could get around: what
// the trace says has no wire form. The test fails if this list is not
// exactly the fixtures that could not be driven, so it cannot grow
// unnoticed, and if any other fixture's two logs differ.
var undriveable = map[string]string{
	"main/ask_rules_grant_single_use.jsonl":              "asks answered in band and asks left for later: a client can elicit or it cannot",
	"main/ask_taint_trusted_source_does_not_taint.jsonl": "output of another server: one run fronts one server",
	"main/deny_approval_expired.jsonl":                   "a grant with an expiry of its own: the gateway's grants expire by the policy's TTL",
	"main/deny_approval_grant_id_reused.jsonl":           "a grant with an id of its own: grant ids are the gateway's",
	"main/deny_approval_no_approver.jsonl":               "an unnamed or self approval: the gateway refuses the answer and records nothing",
	"main/deny_approval_self_approved.jsonl":             "an unnamed or self approval: the gateway refuses the answer and records nothing",
	"main/deny_rules_redacted_but_denied_anyway.jsonl":   "a redacted argument the policy does not redact: the gateway writes down what the policy redacts",
	"main/deny_taint_content_blocks.jsonl":               "output for a call the gateway does not forward",
	"main/deny_taint_ip_url_other_path.jsonl":            "output for a call the gateway does not forward",
	"main/deny_taint_url_host_query_added.jsonl":         "output for a call the gateway does not forward",
	"main/unevaluable_rules_redacted_destination.jsonl":  "a redacted argument the policy does not redact: the gateway writes down what the policy redacts",
	"main/unevaluable_rules_redacted_predicate.jsonl":    "a redacted argument the policy does not redact: the gateway writes down what the policy redacts",
	"main/unevaluable_taint_redacted_channel.jsonl":      "a redacted argument the policy does not redact: the gateway writes down what the policy redacts",
}

// TestLiveGatewayWritesWhatRecordWrites is the claim verify rests on: the
// offline driver (record) and the live gateway write the same log for the
// same session. Every trace fixture is shaped into what a real client and
// server can carry (below), recorded with audit.Recorder, and driven
// through the proxy between a scripted client and a scripted server on
// the same clock; the logs must be identical record for record, except
// the times (and the hashes that cover them), and so must the evidence.
//
// The shaping, applied to both sides alike: tools listed by name get an
// object schema (a server lists definitions); call ids are numbered as
// the gateway numbers them; output no call asked for gets a call to its
// tool (only a call brings a server's output); text output is a text
// block, and an allowed call the trace gives no output gets an empty one
// (a server answers every forwarded call); a named approver's answer
// right after the call is given in band, through elicitation, and a
// later one out of band, as a signed answer file; a tools event is the
// gateway's relist.
func TestLiveGatewayWritesWhatRecordWrites(t *testing.T) {
	skey, vkey := approverKey(t, "lee")
	got := map[string]string{}
	var mu sync.Mutex
	for _, set := range []string{"main", "ask-on-taint"} {
		data, err := os.ReadFile(filepath.Join("..", "fixtures", "policies", set+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		pol, err := engine.Load(set+".yaml", data)
		if err != nil {
			t.Fatal(err)
		}
		files, _ := filepath.Glob(filepath.Join("..", "fixtures", "traces", set, "*.jsonl"))
		if len(files) == 0 {
			t.Fatalf("no trace fixtures in %s", set)
		}
		for _, file := range files {
			name := set + "/" + filepath.Base(file)
			t.Run(name, func(t *testing.T) {
				d := &diffRun{t: t, pol: pol, skey: skey, vkey: vkey}
				if why := d.run(file); why != "" {
					mu.Lock()
					got[name] = why
					mu.Unlock()
					t.Logf("not driven: %s", why)
				}
			})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(got)) {
		if want, ok := undriveable[name]; !ok || want != got[name] {
			t.Errorf("%s could not be driven through the gateway (%s); the undriveable list says %q", name, got[name], want)
		}
	}
	for name, why := range undriveable {
		if _, ok := got[name]; !ok {
			t.Errorf("%s is listed as undriveable (%s) but was driven", name, why)
		}
	}
}

// diffRun is one fixture's differential run.
type diffRun struct {
	t          *testing.T
	pol        *engine.Policy
	skey, vkey string
	// lines is the shaped trace, events the same parsed.
	lines  []map[string]any
	events []replay.Event
	// inBand marks the grants given through elicitation, by line.
	inBand map[int]bool
}

func (d *diffRun) run(file string) string {
	raw, err := os.ReadFile(file)
	if err != nil {
		d.t.Fatal(err)
	}
	if why := d.shape(raw); why != "" {
		return why
	}
	first := d.record()
	if why := d.complete(first); why != "" {
		return why
	}
	rec := d.record()
	live, why := d.live()
	if why != "" {
		return why
	}
	if diff := d.compare(rec, live); diff != "" {
		d.t.Error(diff)
	}
	return ""
}

// recorded is a log and its evidence.
type recorded struct {
	lines    []map[string]any
	evidence []string
}

func decodeLine(t *testing.T, b []byte) map[string]any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("%q: %v", b, err)
	}
	return m
}

func event(ev map[string]any) (string, map[string]any) {
	for k, v := range ev {
		return k, v.(map[string]any)
	}
	return "", nil
}

func str(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

// shape makes the trace one a client and a server can carry (see the
// test's comment), or says why it cannot be.
func (d *diffRun) shape(raw []byte) string {
	var out []map[string]any
	ids := map[string]string{} // the trace's call id -> the gateway's
	tools := map[string]string{}
	var session, server, subject string
	n := 0
	add := func(kind string, body map[string]any) { out = append(out, map[string]any{kind: body}) }
	line := 0
	for b := range bytes.SplitSeq(raw, []byte("\n")) {
		line++
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		ev := decodeLine(d.t, b)
		kind, body := event(ev)
		switch kind {
		case "start":
			session, server, n, ids, tools = str(body, "session"), str(body, "server"), 0, map[string]string{}, map[string]string{}
			if p, ok := body["principal"].(map[string]any); ok {
				subject = str(p, "subject")
			}
			body["tools"] = fullTools(body["tools"])
			// The server's answer to initialize reaches the client: the
			// gateway records its text as the session's first output.
			add(kind, body)
			kind, body = "output", map[string]any{"channel": "initialize", "structured": initializeResult()}
			if a, ok := ev["start"].(map[string]any)["at"]; ok {
				body["at"] = a
			}
		case "tools":
			body["tools"], body["repin"] = fullTools(body["tools"]), true
		case "call":
			if r, ok := body["redacted"].([]any); ok {
				// The gateway writes down what the policy redacts: the
				// placeholder the trace holds is the value it is given.
				for _, path := range r {
					if !slices.ContainsFunc(d.pol.Redact(), func(p engine.Path) bool { return p.String() == path }) {
						return "a redacted argument the policy does not redact: the gateway writes down what the policy redacts"
					}
				}
				delete(body, "redacted")
			}
			id := str(body, "id")
			if id == "" {
				id = fmt.Sprintf("L%d", line)
			}
			n++
			ids[id] = fmt.Sprintf("c%d", n)
			body["id"] = ids[id]
			tools[ids[id]] = str(body, "tool")
		case "output":
			if ch := str(body, "channel"); ch != "" {
				_, content := body["content"]
				if (ch != "notifications/message" && ch != "resources/read") || content || body["error"] == true {
					return "output by a channel the scripted server does not speak"
				}
				add(kind, body)
				continue
			}
			if s := str(body, "server"); s != "" && s != server {
				return "output of another server: one run fronts one server"
			}
			delete(body, "server")
			if str(body, "call") == "" {
				// Output no call asked for: the server says it unasked,
				// in a log message.
				if body["error"] == true {
					return "a failed output that answers no call"
				}
				data := map[string]any{}
				for _, k := range []string{"content", "structured"} {
					if v, ok := body[k]; ok {
						data[k] = v
					}
					delete(body, k)
				}
				if len(data) > 0 {
					body["structured"] = data
				}
				delete(body, "tool")
				body["channel"] = "notifications/message"
				break
			}
			body["call"] = ids[str(body, "call")]
			if tool := str(body, "tool"); tool != "" && tool != tools[str(body, "call")] {
				return "output naming another tool than its call's"
			}
			delete(body, "tool")
			content, _ := body["content"].([]any)
			if text := str(body, "text"); text != "" {
				content = append([]any{map[string]any{"type": "text", "text": text}}, content...)
			}
			delete(body, "text")
			body["content"] = append([]any{}, content...)
		case "grant":
			if _, ok := body["expires"]; ok {
				return "a grant with an expiry of its own: the gateway's grants expire by the policy's TTL"
			}
			if _, ok := body["id"]; ok {
				return "a grant with an id of its own: grant ids are the gateway's"
			}
			if a := str(body, "approver"); a == "" || a == subject {
				return "an unnamed or self approval: the gateway refuses the answer and records nothing"
			} else if a != "lee" {
				return "an approver with no key in the test"
			}
			call := ids[str(body, "call")]
			body["call"] = call
			if k, prev := event(out[len(out)-1]); k == "call" && str(prev, "id") == call {
				body["approver"], body["id"] = audit.ElicitationApprover, "elicit-"+call
			} else {
				body["id"] = session + "-" + call
			}
		}
		add(kind, body)
	}
	d.lines = timed(out)
	return ""
}

// timed gives every event a time (record takes a trace with times on all
// events or none): the one before it, or for the first, the first given.
// A trace with no times gets the ones record would give it, one second a
// line, except that the server's answer to initialize is on its start's
// time: the gateway records it as the session starts.
func timed(lines []map[string]any) []map[string]any {
	var last any
	for _, l := range lines {
		if _, body := event(l); body["at"] != nil && last == nil {
			last = body["at"]
		}
	}
	if last == nil {
		for i, l := range lines {
			kind, body := event(l)
			if kind != "output" || str(body, "channel") != "initialize" {
				last = replay.Epoch.Add(time.Duration(i+1) * time.Second).Format(time.RFC3339)
			}
			body["at"] = last
		}
		return lines
	}
	for _, l := range lines {
		_, body := event(l)
		if body["at"] == nil {
			body["at"] = last
		}
		last = body["at"]
	}
	return lines
}

// fullTools lists tools given by name as the definitions a server lists.
func fullTools(v any) any {
	l, _ := v.([]any)
	out := []any{}
	for _, t := range l {
		if name, ok := t.(string); ok {
			t = map[string]any{"name": name, "inputSchema": map[string]any{"type": "object"}}
		}
		out = append(out, t)
	}
	return out
}

func (d *diffRun) trace() []byte {
	var b bytes.Buffer
	for _, l := range d.lines {
		j, err := json.Marshal(l)
		if err != nil {
			d.t.Fatal(err)
		}
		b.Write(j)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// record writes the shaped trace's log with audit.Recorder.
func (d *diffRun) record() recorded {
	d.t.Helper()
	events, err := replay.ParseTrace("shaped.jsonl", bytes.NewReader(d.trace()))
	if err != nil {
		d.t.Fatalf("the shaped trace: %v\n%s", err, d.trace())
	}
	d.events = events
	dir := d.t.TempDir()
	var buf bytes.Buffer
	ev := chain.OpenEvidence(filepath.Join(dir, "evidence"))
	r := &audit.Recorder{Policy: d.pol, Log: chain.NewWriter(&buf, chain.None), Evidence: ev,
		Secret: diffSecret, Approvers: map[string]string{"lee": d.skey}}
	if err := r.Record("shaped.jsonl", events); err != nil {
		d.t.Fatalf("record: %v", err)
	}
	return readLog(d.t, buf.Bytes(), ev.Dir)
}

var diffSecret = []byte("0123456789abcdef0123456789abcdef")

func readLog(t *testing.T, b []byte, evDir string) recorded {
	t.Helper()
	var r recorded
	for l := range bytes.SplitSeq(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
		r.lines = append(r.lines, decodeLine(t, l))
	}
	ds, err := chain.OpenEvidence(evDir).Digests()
	if err != nil {
		t.Fatal(err)
	}
	r.evidence = ds
	return r
}

// complete finishes the shape from the recorded decisions: which asks are
// answered in band, and the empty output of an allowed call with none.
func (d *diffRun) complete(first recorded) string {
	final := map[string]string{} // call -> its final verdict
	asked := map[string]bool{}
	for _, r := range first.lines {
		switch str(r, "kind") {
		case "call":
			final[str(r, "call")] = str(r, "verdict")
			asked[str(r, "call")] = str(r, "verdict") == "ask"
		case "grant":
			if dec, ok := r["decision"].(map[string]any); ok {
				final[str(r, "call")] = str(dec, "verdict")
			}
		}
	}
	answered := map[string]bool{}
	d.inBand = map[int]bool{}
	var out []map[string]any
	outputs := map[string]bool{}
	elicits, later := false, false
	for i, l := range d.lines {
		kind, body := event(l)
		switch kind {
		case "output":
			if str(body, "channel") != "" {
				break
			}
			if final[str(body, "call")] != "allow" {
				return "output for a call the gateway does not forward"
			}
			outputs[str(body, "call")] = true
		case "grant":
			call := str(body, "call")
			if !asked[call] || answered[call] {
				return "an answer to a call that is not waiting for one"
			}
			if str(body, "approver") == audit.ElicitationApprover {
				answered[call], elicits = true, true
			} else if !d.callFollows(i) {
				return "an out-of-band answer is taken at the next call, and none follows"
			}
		}
	}
	for call := range asked {
		if asked[call] && !answered[call] {
			later = true
		}
	}
	if elicits && later {
		return "asks answered in band and asks left for later: a client can elicit or it cannot"
	}
	// An allowed call's output goes right after the call, or after the
	// answer that allowed it.
	for i, l := range d.lines {
		out = append(out, l)
		kind, body := event(l)
		call := str(body, "id")
		if kind == "grant" {
			call = str(body, "call")
		}
		if (kind != "call" && kind != "grant") || final[call] != "allow" || outputs[call] {
			continue
		}
		if kind == "call" && i+1 < len(d.lines) {
			if k, next := event(d.lines[i+1]); k == "grant" && str(next, "call") == call && str(next, "approver") == audit.ElicitationApprover {
				continue
			}
		}
		empty := map[string]any{"call": call, "content": []any{}}
		if a, ok := body["at"]; ok {
			empty["at"] = a
		}
		out = append(out, map[string]any{"output": empty})
		outputs[call] = true
	}
	d.lines = out
	return ""
}

// callFollows says a call comes after line i in its session.
func (d *diffRun) callFollows(i int) bool {
	for _, l := range d.lines[i+1:] {
		switch kind, _ := event(l); kind {
		case "call":
			return true
		case "start":
			return false
		}
	}
	return false
}

// compare fails the test where the two logs differ. Times are compared
// too, with one difference by design: the gateway learns of an answer
// left for later (a signed answer file) when it next reads the answers,
// at its session's next call, and writes its grant record then; record
// writes it at the answer's own time, so the live one must be on the
// time of record's next record of that session. Its signed time, which
// the grant's expiry runs from, is compared exactly. prev and hash
// follow from the rest.
func (d *diffRun) compare(rec, live recorded) string {
	norm := func(r map[string]any, ts any) string {
		m := map[string]any{}
		for k, v := range r {
			m[k] = v
		}
		m["ts"] = ts
		delete(m, "prev")
		delete(m, "hash")
		b, _ := json.Marshal(m)
		return string(b)
	}
	for i := range max(len(rec.lines), len(live.lines)) {
		var a, b string
		if i < len(rec.lines) {
			r := rec.lines[i]
			ts := r["ts"]
			if str(r, "kind") == "grant" && str(r, "approver") != audit.ElicitationApprover {
				ts = nil // no later record of its session: no time it could be read at
				for _, n := range rec.lines[i+1:] {
					if str(n, "session") == str(r, "session") {
						ts = n["ts"]
						break
					}
				}
			}
			a = norm(r, ts)
		}
		if i < len(live.lines) {
			b = norm(live.lines[i], live.lines[i]["ts"])
		}
		if a != b {
			return fmt.Sprintf("record %d differs:\nrecord: %s\nlive:   %s\nshaped trace:\n%s", i, a, b, d.trace())
		}
	}
	if !slices.Equal(rec.evidence, live.evidence) {
		return fmt.Sprintf("the evidence differs: record %q, live %q", rec.evidence, live.evidence)
	}
	return ""
}
