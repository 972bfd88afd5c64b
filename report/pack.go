package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"bailiff/chain"
	"bailiff/engine"
	"bailiff/replay"
	"bailiff/verify"
)

// PackInput is what a review pack is built from.
type PackInput struct {
	Logs []string
	// PolicyName and PolicyData, when given, are --policy: compared with
	// the policies the logs' sessions embed, never taken in their place.
	PolicyName  string
	PolicyData  []byte
	Tools       map[string][]byte // tools/list answers by file name
	ShadowFile  string
	Shadow      []byte // shadow --format json output, or nil
	AblateFile  string
	Ablate      []byte // ablate --format json output, or nil
	Since       time.Time
	Until       time.Time
	GeneratedAt string // the date line; default the last record's day
	// Stdin is the file a log named "-" was spooled to.
	Stdin string
	// Progress, when set, is written every byte of the logs as they are
	// read (twice: verified, then summarized), for a progress bar.
	Progress io.Writer
	// Checkpoint, when set, is a verified checkpoint of the one log.
	Checkpoint *chain.Checkpoint
}

// Severity of a pack finding, as SARIF levels.
const (
	SevHigh   = "error"
	SevMedium = "warning"
	SevLow    = "note"
)

// PackFinding is one thing a reviewer should look at.
type PackFinding struct {
	Rule     string // a stable id: verify-failure, no-sink-params, …
	Severity string
	Where    string // file (and seq) or policy
	Line     int    // 1-based line in Where, 0 if none
	Message  string
}

// LogStatus is one log's verify outcome.
type LogStatus struct {
	File        string
	Result      string
	Records     int64
	Findings    int
	Unevaluable int
}

// Pack is a review pack's content, ready to write as Markdown, HTML or
// SARIF. Everything in it comes from its inputs: no clock, no machine.
type Pack struct {
	In     PackInput
	Policy *engine.Policy // the policy described: the last session's
	// PolicyFrom says where Policy comes from: "embedded" (the logs'
	// sessions), "file" (embedded, and --policy is the same policy) or
	// "given" (--policy: no readable session records a policy).
	PolicyFrom string
	// Candidate is a --policy no session was decided under.
	Candidate *engine.Policy
	policies  map[string]*engine.Policy
	last      string // the last session's policy version
	lastAt    time.Time
	// spanFirst and spanLast bound every timed record, in range or not;
	// read counts the sessions read, in range or not.
	spanFirst, spanLast time.Time
	read                int
	sessionIn           map[string]string // session id -> the log it is in
	refs                []InputRef        // the logs read, as results name their inputs
	dup                 error
	Untimed             int // records in range that carry no time
	Logs                []LogStatus
	Sessions            int
	Versions            []string
	First               time.Time
	Last                time.Time
	Calls               int
	ByTool              map[string]map[string]int // tool -> verdict -> n
	ByCheck             map[string]int
	ByRule              map[string]int
	ByDay               map[string]map[string]int // day -> verdict -> n
	Asks                map[string]int            // approved, declined, unanswered
	DeniedTo            map[string]int            // tainted destinations denied, by normalized form
	DestRaw             map[string][]string       // normalized destination -> the forms it was written in
	Redacted            int                       // calls with redacted arguments
	Findings            []PackFinding
	ToolNames           []string
	Annots              map[string][]string        // tool -> annotation hints set
	Dests               map[string][]string        // tool -> destination-shaped arguments
	toolServers         map[string]map[string]bool // tool -> the servers of sessions that called or listed it
}

// BuildPack reads the logs (verifying each) and describes the policy
// their sessions were decided under; --policy is compared with it.
func BuildPack(in PackInput) (*Pack, error) {
	// A results file that is not one would be a pack with a hole the
	// reviewer never sees: refuse it.
	var unverified []PackFinding
	for _, r := range []struct {
		flag, file, what, head string
		data                   []byte
		parse                  func([]byte) error
	}{
		{"--shadow", in.ShadowFile, "shadow", "summary", in.Shadow, func(b []byte) error { _, _, err := parseShadow(b); return err }},
		{"--ablate", in.AblateFile, "ablation", "policy", in.Ablate, func(b []byte) error { _, _, err := parseAblate(b); return err }},
	} {
		if r.data == nil {
			continue
		}
		if err := r.parse(r.data); err != nil {
			return nil, fmt.Errorf("%s %s: %v", r.flag, r.file, err)
		}
		ok, notes, err := resultVerified(r.data, r.head)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %v", r.flag, r.file, err)
		}
		if !ok {
			unverified = append(unverified, PackFinding{Rule: "unverified-baseline", Severity: SevHigh, Where: r.file,
				Message: fmt.Sprintf("the %s result was run with --allow-unverified over logs that fail verify (%s): its numbers stand on a history that may be forged", r.what, strings.Join(notes, "; "))})
		}
	}
	var given *engine.Policy
	if in.PolicyData != nil {
		var err error
		if given, err = engine.Load(in.PolicyName, in.PolicyData); err != nil {
			return nil, err
		}
	}
	p := &Pack{In: in, ByTool: map[string]map[string]int{}, ByCheck: map[string]int{}, ByRule: map[string]int{},
		ByDay: map[string]map[string]int{}, Asks: map[string]int{}, DeniedTo: map[string]int{}, DestRaw: map[string][]string{},
		Annots: map[string][]string{}, Dests: map[string][]string{}, policies: map[string]*engine.Policy{},
		sessionIn: map[string]string{}, toolServers: map[string]map[string]bool{}}
	tools := map[string]bool{}
	for _, name := range in.Logs {
		if err := p.readLog(name, tools); err != nil {
			return nil, err
		}
		if p.dup != nil {
			return nil, p.dup
		}
	}
	// A result about other inputs would sit in the pack as if about these
	// logs: its calls and rates would contradict the pack's own counts.
	for _, r := range []struct {
		flag, file, head string
		data             []byte
	}{
		{"--shadow", in.ShadowFile, "summary", in.Shadow},
		{"--ablate", in.AblateFile, "policy", in.Ablate},
	} {
		if r.data == nil {
			continue
		}
		if err := p.sameInputs(r.flag, r.file, r.head, r.data); err != nil {
			return nil, err
		}
	}
	p.Versions = sortedKeys(p.policies)
	if p.Sessions == 0 && p.read > 0 && (!in.Since.IsZero() || !in.Until.IsZero()) {
		if p.spanFirst.IsZero() {
			return nil, fmt.Errorf("no session of the logs has a record in %s: none of their records carries a real time", rangeText(in.Since, in.Until))
		}
		return nil, fmt.Errorf("no session of the logs has a record in %s: their records span %s to %s",
			rangeText(in.Since, in.Until), p.spanFirst.UTC().Format(time.RFC3339), p.spanLast.UTC().Format(time.RFC3339))
	}
	lintName, lintData := in.PolicyName, in.PolicyData
	switch {
	case len(p.policies) == 0 && given == nil:
		return nil, fmt.Errorf("no readable session in the logs records the policy it was decided under: give it with --policy")
	case len(p.policies) == 0:
		p.Policy, p.PolicyFrom = given, "given"
	default:
		p.Policy, p.PolicyFrom = p.policies[p.last], "embedded"
		if given != nil && given.Version() == p.last {
			p.PolicyFrom = "file"
		} else {
			// Lint the policy the logs hold, not a file that is not it.
			lintName, lintData = "embedded policy "+p.last, p.Policy.Canonical()
		}
		if given != nil && p.policies[given.Version()] == nil {
			p.Candidate = given
			p.Findings = append(p.Findings, PackFinding{Rule: "policy-mismatch", Severity: SevHigh, Where: in.PolicyName,
				Message: fmt.Sprintf("--policy %s (%s) is not the policy any session was decided under (%s): it is shown as a candidate only",
					in.PolicyName, given.Version(), strings.Join(p.Versions, ", "))})
		}
		if given != nil && given.Version() != p.last && p.policies[given.Version()] != nil {
			p.Findings = append(p.Findings, PackFinding{Rule: "policy-not-last", Severity: SevMedium, Where: in.PolicyName,
				Message: fmt.Sprintf("--policy %s (%s) decided earlier sessions, not the last one: the pack describes the last session's, %s",
					in.PolicyName, given.Version(), p.last)})
		}
		if len(p.policies) > 1 {
			p.Findings = append(p.Findings, PackFinding{Rule: "several-policies", Severity: SevMedium, Where: "audit",
				Message: fmt.Sprintf("the sessions were decided under %d policy versions (%s); the pack describes the last session's, %s",
					len(p.policies), strings.Join(p.Versions, ", "), p.last)})
		}
	}
	pol := p.Policy
	var listed []string
	for _, file := range sortedKeys(in.Tools) {
		names, err := engine.ToolNames(in.Tools[file])
		if err != nil {
			return nil, fmt.Errorf("%s: %v", file, err)
		}
		listed = append(listed, names...)
		p.readAnnotations(in.Tools[file])
	}
	for _, n := range listed {
		tools[n] = true
	}
	for n := range pol.Spec().Tools {
		tools[n] = true
	}
	for n := range tools {
		p.ToolNames = append(p.ToolNames, n)
	}
	sort.Strings(p.ToolNames)
	var toolList []string
	if len(listed) > 0 {
		// A tool the logs show called was offered: a rule naming it can
		// match, whatever the tools files say.
		toolList = append(toolList, listed...)
		toolList = append(toolList, sortedKeys(p.ByTool)...)
	}
	lint, err := engine.Lint(lintName, lintData, toolList)
	if err != nil {
		return nil, err
	}
	for _, f := range lint {
		sev := SevMedium
		if f.Kind == engine.LintNoSinkParams || f.Kind == engine.LintWriteNoPrefixes {
			sev = SevHigh
		}
		line := f.Line
		if lintData == nil || lintName != in.PolicyName {
			line = 0 // a line of the canonical form points at no file
		}
		p.Findings = append(p.Findings, PackFinding{Rule: f.Kind, Severity: sev, Where: lintName, Line: line, Message: f.Message})
	}
	var unruled []string
	for _, n := range listed {
		if !p.namedByRule(n) {
			unruled = append(unruled, n)
		}
	}
	if len(unruled) > 0 {
		sort.Strings(unruled)
		p.Findings = append(p.Findings, PackFinding{Rule: "no-rule", Severity: SevLow, Where: lintName,
			Message: fmt.Sprintf("%s %s named by no rule, so every call to them is denied by default: %s", counted(len(unruled), "listed tool"), verb(len(unruled), "is", "are"), strings.Join(unruled, ", "))})
	}
	if n := p.Asks["unanswered"]; n > 0 {
		p.Findings = append(p.Findings, PackFinding{Rule: "unanswered-ask", Severity: SevMedium, Where: "audit",
			Message: fmt.Sprintf("%s %s never answered (each counts as denied)", counted(n, "asked call"), verb(n, "was", "were"))})
	}
	if n := p.ByCheck["budget"]; n > 0 {
		p.Findings = append(p.Findings, PackFinding{Rule: "budget-exhausted", Severity: SevLow, Where: "audit",
			Message: fmt.Sprintf("%s %s denied because a tool's budget was spent", counted(n, "call"), verb(n, "was", "were"))})
	}
	sort.SliceStable(p.Findings, func(i, j int) bool { return sevRank(p.Findings[i].Severity) < sevRank(p.Findings[j].Severity) })
	p.Findings = append(p.Findings, unverified...)
	return p, nil
}

// resultVerified reads whether a shadow or ablate result's baseline was
// verified, from its head line (type head). A result that does not say is
// refused: it comes from a bailiff that did not verify, and a pack built
// on it would vouch for numbers nobody checked.
func resultVerified(data []byte, head string) (bool, []string, error) {
	for _, line := range bytes.Split(data, []byte("\n")) {
		var h struct {
			Type       string   `json:"type"`
			Verified   *bool    `json:"verified"`
			Unverified []string `json:"unverified"`
		}
		if json.Unmarshal(line, &h) != nil || h.Type != head {
			continue
		}
		if h.Verified == nil {
			return false, nil, fmt.Errorf("its %s line does not say whether its logs were verified: give the output of this bailiff's --format json", head)
		}
		return *h.Verified, h.Unverified, nil
	}
	return false, nil, fmt.Errorf("no %s line", head)
}

func sevRank(s string) int {
	switch s {
	case SevHigh:
		return 0
	case SevMedium:
		return 1
	}
	return 2
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func (p *Pack) readAnnotations(data []byte) {
	var list struct {
		Tools []struct {
			Name        string          `json:"name"`
			Annotations map[string]any  `json:"annotations"`
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"tools"`
	}
	if json.Unmarshal(data, &list) != nil {
		return
	}
	for _, t := range list.Tools {
		var schema struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		_ = json.Unmarshal(t.InputSchema, &schema)
		for _, k := range sortedKeys(schema.Properties) {
			if engine.DestinationShaped(k) {
				p.Dests[t.Name] = append(p.Dests[t.Name], k)
			}
		}
		for _, k := range sortedKeys(t.Annotations) {
			if v, ok := t.Annotations[k].(bool); ok && v {
				p.Annots[t.Name] = append(p.Annots[t.Name], k)
			}
		}
	}
}

func (p *Pack) inRange(t time.Time) bool {
	return (p.In.Since.IsZero() || !t.Before(p.In.Since)) && (p.In.Until.IsZero() || t.Before(p.In.Until))
}

// readLog verifies one log and, if its records can be read, adds its
// calls to the summary.
func (p *Pack) readLog(name string, tools map[string]bool) error {
	file := name
	if name == "-" {
		file = p.In.Stdin
	}
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	ev := chain.Evidence{Dir: chain.EvidenceDir(file)}
	var r io.Reader = f
	if p.In.Progress != nil {
		r = io.TeeReader(f, p.In.Progress)
	}
	rep, err := verify.Log(name, bufio.NewReader(r), ev, verify.Options{Workers: 1, Checkpoint: p.In.Checkpoint})
	if err != nil {
		return err
	}
	st := LogStatus{File: name, Result: VerifyResult(rep), Records: rep.Records, Findings: len(rep.Findings), Unevaluable: len(rep.Unevaluable)}
	p.Logs = append(p.Logs, st)
	if _, err := f.Seek(0, 0); err != nil {
		return err
	}
	head, err := chain.FirstLineHash(f)
	if err != nil {
		return err
	}
	p.refs = append(p.refs, InputRef{File: name, First: head, Records: rep.Records})
	for _, x := range rep.Findings {
		p.Findings = append(p.Findings, PackFinding{Rule: "verify-" + x.Kind, Severity: SevHigh, Where: name, Line: int(x.Seq) + 1,
			Message: fmt.Sprintf("record %d (%s): %s", x.Seq, x.Kind, x.Reason)})
	}
	if n := len(rep.Unevaluable); n > 0 {
		p.Findings = append(p.Findings, PackFinding{Rule: "unevaluable", Severity: SevLow, Where: name,
			Message: fmt.Sprintf("%s cannot be recomputed: %s on redacted or purged inputs", counted(n, "decision"), verb(n, "it depended", "they depended"))})
	}
	for _, x := range rep.Findings {
		if x.Kind == verify.FindIntegrity || x.Kind == verify.FindPolicy {
			// Its records are not evidence: summarize nothing of it.
			return nil
		}
	}
	if _, err := f.Seek(0, 0); err != nil {
		return err
	}
	hasOutput := false
	err = replay.LogSessions(name, bufio.NewReader(r), ev, func(s replay.LogSession) error {
		// A session outside --since/--until is not described: not its
		// calls, and not its policy either.
		p.read++
		if prev, ok := p.sessionIn[s.ID()]; ok && prev != name && p.dup == nil {
			p.dup = fmt.Errorf("session %s is in both %s and %s: one session in two logs would be counted twice (are they copies, or two gateways reusing ids?)", s.ID(), prev, name)
		}
		p.sessionIn[s.ID()] = name
		for _, e := range s.Events {
			hasOutput = hasOutput || e.Output != nil
		}
		inside := p.In.Since.IsZero() && p.In.Until.IsZero()
		var start time.Time
		for _, e := range s.Events {
			if !realTime(e.At) {
				continue
			}
			if start.IsZero() {
				start = e.At
			}
			if p.spanFirst.IsZero() || e.At.Before(p.spanFirst) {
				p.spanFirst = e.At
			}
			if e.At.After(p.spanLast) {
				p.spanLast = e.At
			}
			inside = inside || p.inRange(e.At)
		}
		if !inside {
			return nil
		}
		p.Sessions++
		p.policies[s.Policy.Version()] = s.Policy
		server := ""
		if len(s.Events) > 0 && s.Events[0].Start != nil {
			st := s.Events[0].Start
			server = st.Server
			for _, t := range st.Tools {
				p.sawServer(server, t.Name)
			}
		}
		// The last session is the one that started last, whichever log
		// and whatever order the logs were given in; untimed sessions
		// fall back to that order.
		if realTime(start) {
			if !start.Before(p.lastAt) {
				p.last, p.lastAt = s.Policy.Version(), start
			}
		} else if p.lastAt.IsZero() {
			p.last = s.Policy.Version()
		}
		// An asked call's verdict is its final one, as replay and shadow
		// show it: the answer that settles it moves it from ask. Its check
		// stays the one that asked; approval counts the answer.
		type asked struct{ tool, day string }
		open := map[string]asked{}
		for _, e := range s.Events {
			if !realTime(e.At) {
				// No time to place it in a period: counted, never dated.
				p.Untimed++
				if !p.In.Since.IsZero() || !p.In.Until.IsZero() {
					continue
				}
			} else if !p.inRange(e.At) {
				continue
			} else {
				if p.First.IsZero() || e.At.Before(p.First) {
					p.First = e.At
				}
				if e.At.After(p.Last) {
					p.Last = e.At
				}
			}
			switch {
			case e.Call != nil && e.Call.Recorded != nil:
				d := e.Call.Recorded
				p.Calls++
				tools[e.Call.Tool] = true
				p.sawServer(server, e.Call.Tool)
				v := string(d.Verdict)
				if p.ByTool[e.Call.Tool] == nil {
					p.ByTool[e.Call.Tool] = map[string]int{}
				}
				p.ByTool[e.Call.Tool][v]++
				p.ByCheck[string(d.Check)]++
				if d.Rule != "" {
					p.ByRule[d.Rule]++
				}
				day := "(no time)"
				if realTime(e.At) {
					day = e.At.UTC().Format("2006-01-02")
				}
				if p.ByDay[day] == nil {
					p.ByDay[day] = map[string]int{}
				}
				p.ByDay[day][v]++
				if len(e.Call.Redacted) > 0 {
					p.Redacted++
				}
				if d.Verdict == engine.Ask {
					open[e.Call.ID] = asked{e.Call.Tool, day}
				}
				if d.Verdict == engine.Deny && d.Check == engine.CheckTaint {
					dest, raw := d.Destination, writtenDestination(d.Reason)
					if dest == "" {
						dest = "(redacted)"
					}
					// The reason quotes the argument's path too, which the
					// caller chose: a quoted form that does not read as the
					// decided destination is not shown as it.
					if raw == "" || engine.Normalize(raw) != d.Destination {
						raw = dest
					}
					p.DeniedTo[dest]++
					if !slices.Contains(p.DestRaw[dest], raw) {
						p.DestRaw[dest] = append(p.DestRaw[dest], raw)
					}
				}
			case e.Grant != nil && e.Grant.Recorded != nil && open[e.Grant.Call] != (asked{}):
				a := open[e.Grant.Call]
				delete(open, e.Grant.Call)
				d := e.Grant.Recorded
				v := string(d.Verdict)
				p.ByTool[a.tool][string(engine.Ask)]--
				p.ByTool[a.tool][v]++
				p.ByDay[a.day][string(engine.Ask)]--
				p.ByDay[a.day][v]++
				if e.Grant.Recorded.Verdict == engine.Allow {
					p.Asks["approved"]++
				} else {
					p.Asks["declined"]++
				}
			}
		}
		p.Asks["unanswered"] += len(open)
		return nil
	})
	if err != nil {
		p.Findings = append(p.Findings, PackFinding{Rule: "unreadable", Severity: SevHigh, Where: name, Message: err.Error()})
	}
	if _, err := os.Stat(ev.Dir); err != nil && hasOutput {
		// "ok" is then true of the chain and the verdicts that needed no
		// output, and nothing else: no output was read or checked.
		where := "no evidence store at " + ev.Dir
		if name == "-" {
			where = "it was read from standard input, with no evidence store"
		}
		p.Findings = append(p.Findings, PackFinding{Rule: "no-evidence", Severity: SevMedium, Where: name,
			Message: where + ": no tool output was read, so an altered output could not be found, and every decision that depended on one is unevaluable"})
	}
	return nil
}

// realTime tells whether t is a time a record was written at, not a
// placeholder: zero, or the clock bailiff record gives events without
// "at" (replay.Epoch plus whole seconds, one per trace line), which would
// otherwise show as a period in January 2000 that never happened.
func realTime(t time.Time) bool {
	if t.IsZero() {
		return false
	}
	// Older record stamped events without "at" at the epoch plus their
	// line in seconds: whole seconds within days of it. A real time is
	// anything else, a real log of early 2000 included.
	d := t.Sub(replay.Epoch)
	return d < 0 || d >= 1<<20*time.Second || t.Nanosecond() != 0
}

// writtenDestination is the destination as the call wrote it, which the
// taint check's reason quotes; the decision's Destination is normalized
// (lower-cased), which is how calls are counted but not what was sent.
func writtenDestination(reason string) string {
	m := quotedDest.FindStringSubmatch(reason)
	if m == nil {
		return ""
	}
	s, err := strconv.Unquote(m[1])
	if err != nil {
		return ""
	}
	return s
}

var quotedDest = regexp.MustCompile(`^destination \S+ ("(?:[^"\\]|\\.)*")`)

// shadowSummary reads the counts line of shadow --format json output.
func parseShadow(data []byte) (map[string]int, int, error) {
	for _, line := range bytes.Split(data, []byte("\n")) {
		var s struct {
			Type   string         `json:"type"`
			Calls  int            `json:"calls"`
			Counts map[string]int `json:"counts"`
		}
		if json.Unmarshal(line, &s) == nil && s.Type == "summary" {
			return s.Counts, s.Calls, nil
		}
	}
	return nil, 0, fmt.Errorf("no summary line: give the output of bailiff shadow --format json")
}

func parseAblate(data []byte) ([]ablationLine, *ablationTotals, error) {
	var lines []ablationLine
	var tot *ablationTotals
	for _, line := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var head struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(line, &head); err != nil {
			return nil, nil, err
		}
		switch head.Type {
		case "check":
			var l ablationLine
			if err := json.Unmarshal(line, &l); err != nil {
				return nil, nil, err
			}
			lines = append(lines, l)
		case "policy":
			var t ablationTotals
			if err := json.Unmarshal(line, &t); err != nil {
				return nil, nil, err
			}
			tot = &t
		}
	}
	if tot == nil {
		return nil, nil, fmt.Errorf("no policy line: give the output of bailiff ablate --format json")
	}
	return lines, tot, nil
}

func orNone(l []string) string { return orWord(l, "none") }

func orWord(l []string, none string) string {
	if len(l) == 0 {
		return none
	}
	return strings.Join(l, ", ")
}

// rangeText names the range --since and --until give.
func rangeText(since, until time.Time) string {
	switch {
	case until.IsZero():
		return "--since " + since.UTC().Format(time.RFC3339)
	case since.IsZero():
		return "--until " + until.UTC().Format(time.RFC3339)
	}
	return "--since " + since.UTC().Format(time.RFC3339) + " --until " + until.UTC().Format(time.RFC3339)
}

// sameInputs refuses a shadow or ablation result computed over inputs
// other than the pack's logs: a trace, another log, or one of these logs
// at another length.
func (p *Pack) sameInputs(flag, file, head string, data []byte) error {
	var theirs []InputRef
	found := false
	for _, line := range bytes.Split(data, []byte("\n")) {
		var h struct {
			Type   string      `json:"type"`
			Inputs *[]InputRef `json:"inputs"`
		}
		if json.Unmarshal(line, &h) != nil || h.Type != head {
			continue
		}
		if h.Inputs == nil {
			return fmt.Errorf("%s %s: its %s line does not name its inputs: give the output of this bailiff's --format json", flag, file, head)
		}
		theirs, found = *h.Inputs, true
		break
	}
	if !found {
		return fmt.Errorf("%s %s: no %s line", flag, file, head)
	}
	key := func(r InputRef) string {
		if r.Trace {
			return "trace " + r.File
		}
		return fmt.Sprintf("%s/%d", r.First, r.Records)
	}
	count := map[string]int{}
	for _, r := range p.refs {
		count[key(r)]++
	}
	for _, r := range theirs {
		count[key(r)]--
	}
	for _, n := range count {
		if n != 0 {
			return fmt.Errorf("%s %s was computed over other inputs than the pack's logs: it covers %s; the pack reads %s", flag, file, refNames(theirs), refNames(p.refs))
		}
	}
	return nil
}

func refNames(refs []InputRef) string {
	if len(refs) == 0 {
		return "nothing"
	}
	var out []string
	for _, r := range refs {
		if r.Trace {
			out = append(out, r.File+" (a trace)")
		} else {
			out = append(out, fmt.Sprintf("%s (%d records)", r.File, r.Records))
		}
	}
	return strings.Join(out, ", ")
}
