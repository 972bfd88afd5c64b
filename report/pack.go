package report

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"bailiff/audit"
	"bailiff/engine"
	"bailiff/verify"
)

// PackInput is what a review pack is built from.
type PackInput struct {
	// Logs are the audit logs as verified, in the order given; Summary
	// counts their evidential sessions between Since and Until.
	Logs    []PackLog
	Summary *audit.Summary
	// PolicyName and Given, when given, are --policy as loaded: compared
	// with the policies the logs' sessions embed, never taken in their
	// place.
	PolicyName  string
	Given       *engine.Policy
	Tools       map[string][]engine.ListedTool // tools/list answers by file name
	ShadowFile  string
	Shadow      []byte // shadow --format json output, or nil
	AblateFile  string
	Ablate      []byte // ablate --format json output, or nil
	Since       time.Time
	Until       time.Time
	GeneratedAt string // the date line; default the last record's day
	// Checkpoint, when set, is the verified checkpoint the one log was
	// checked against.
	Checkpoint *Checkpoint

	// shadow and ablation are Shadow and Ablate read, once.
	shadow   *shadowResult
	ablation *ablationResult
}

// PackLog is one audit log as verified for a pack.
type PackLog struct {
	Name   string // as given: "-" is standard input
	Report *verify.Report
	First  string // the hash of its first line, as results name their inputs
	// Read is what reading its sessions found; nil when its records are
	// not evidence (verify.Evidential), and were not read.
	Read *audit.LogRead
	// EvidenceDir is its evidence store; NoEvidence is set when there is
	// none there.
	EvidenceDir string
	NoEvidence  bool
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
	refs      []InputRef // the logs read, as results name their inputs
	Logs      []LogStatus
	Versions  []string
	*audit.Summary
	Findings  []PackFinding
	ToolNames []string
	Annots    map[string][]string // tool -> annotation hints set
	Dests     map[string][]string // tool -> destination-shaped arguments
}

// CheckInputs refuses a --policy, --shadow or --ablate BuildPack would
// refuse, so a caller can before it reads any log; the results it reads
// are kept in in, for BuildPack.
func CheckInputs(in *PackInput) error {
	_, err := checkInputs(in)
	return err
}

// BuildPack describes the verified logs and the policy their sessions
// were decided under; --policy is compared with it.
func BuildPack(in PackInput) (*Pack, error) {
	unverified, err := checkInputs(&in)
	if err != nil {
		return nil, err
	}
	p := &Pack{In: in, Summary: in.Summary, Annots: map[string][]string{}, Dests: map[string][]string{}}
	if p.Summary == nil {
		p.Summary = audit.NewSummary(in.Since, in.Until)
	}
	for _, l := range in.Logs {
		p.addLog(l)
	}
	if err := p.sameResults(in); err != nil {
		return nil, err
	}
	if err := p.resultsFit(in); err != nil {
		return nil, err
	}
	p.Versions = sortedKeys(p.Policies)
	if err := p.inRange(in); err != nil {
		return nil, err
	}
	lintName, linted, err := p.choosePolicy(in)
	if err != nil {
		return nil, err
	}
	listed, toolList := p.listTools(in)
	if err := p.lint(in, lintName, linted, toolList); err != nil {
		return nil, err
	}
	p.auditFindings(listed, lintName)
	p.resultFindings()
	sort.SliceStable(p.Findings, func(i, j int) bool { return sevRank(p.Findings[i].Severity) < sevRank(p.Findings[j].Severity) })
	p.Findings = append(p.Findings, unverified...)
	return p, nil
}

// sameResults refuses a shadow or ablate result about other inputs: it
// would sit in the pack as if about these logs, its calls and rates
// contradicting the pack's own counts.
func (p *Pack) sameResults(in PackInput) error {
	if r := in.shadow; r != nil {
		if err := p.sameInputs("--shadow", in.ShadowFile, "summary", r.summary.unverifiedFields); err != nil {
			return err
		}
	}
	if r := in.ablation; r != nil {
		return p.sameInputs("--ablate", in.AblateFile, "policy", r.totals.unverifiedFields)
	}
	return nil
}

// noPolicy is the error for logs of which no session records a policy,
// saying why when verify does: a log whose records are not evidence is
// not read at all, and a torn last line, the common case, is repaired,
// not described with a policy from elsewhere.
func noPolicy(logs []PackLog) error {
	for _, l := range logs {
		if l.Read != nil || l.Report == nil || len(l.Report.Findings) == 0 {
			continue
		}
		f := l.Report.Findings[0]
		if f.Torn {
			return fmt.Errorf("%s ends in a torn line (record %d, as a crashed writer leaves it), so none of its records is evidence and none records the policy: bailiff repair %s -o FIXED.jsonl cuts the torn line (or give the policy with --policy for a pack of its finding)",
				l.Name, f.Seq, l.Name)
		}
		n := fmt.Sprintf("%d findings", len(l.Report.Findings))
		if len(l.Report.Findings) == 1 {
			n = "1 finding"
		}
		return fmt.Errorf("%s fails verify (%s, the first at record %d: %s), so none of its records is evidence and none records the policy: give it with --policy for a pack of its findings",
			l.Name, n, f.Seq, f.Kind)
	}
	return fmt.Errorf("no readable session in the logs records the policy it was decided under: give it with --policy")
}

// inRange refuses a period no session of the logs has a record in.
func (p *Pack) inRange(in PackInput) error {
	if p.Sessions == 0 && p.Read > 0 && (!in.Since.IsZero() || !in.Until.IsZero()) {
		if p.SpanFirst.IsZero() {
			return fmt.Errorf("no session of the logs has a record in %s: none of their records carries a real time", rangeText(in.Since, in.Until))
		}
		return fmt.Errorf("no session of the logs has a record in %s: their records span %s to %s",
			rangeText(in.Since, in.Until), p.SpanFirst.UTC().Format(time.RFC3339), p.SpanLast.UTC().Format(time.RFC3339))
	}
	return nil
}

// choosePolicy sets the policy the pack describes (the last session's, or
// the one given when no session records one), with the findings of a
// given policy that is not it; it returns the policy to lint.
func (p *Pack) choosePolicy(in PackInput) (lintName string, linted *engine.Policy, err error) {
	given := in.Given
	lintName, linted = in.PolicyName, given
	switch {
	case len(p.Policies) == 0 && given == nil:
		return "", nil, noPolicy(in.Logs)
	case len(p.Policies) == 0:
		p.Policy, p.PolicyFrom = given, "given"
	default:
		p.Policy, p.PolicyFrom = p.Policies[p.LastPolicy], "embedded"
		if given != nil && given.Version() == p.LastPolicy {
			p.PolicyFrom = "file"
		} else {
			// Lint the policy the logs hold, not a file that is not it.
			lintName, linted = "embedded policy "+p.LastPolicy, p.Policy
		}
		if given != nil && p.Policies[given.Version()] == nil {
			p.Candidate = given
			p.Findings = append(p.Findings, PackFinding{Rule: "policy-mismatch", Severity: SevHigh, Where: in.PolicyName,
				Message: fmt.Sprintf("--policy %s (%s) is not the policy any session was decided under (%s): it is shown as a candidate only",
					in.PolicyName, given.Version(), strings.Join(p.Versions, ", "))})
		}
		if given != nil && given.Version() != p.LastPolicy && p.Policies[given.Version()] != nil {
			p.Findings = append(p.Findings, PackFinding{Rule: "policy-not-last", Severity: SevMedium, Where: in.PolicyName,
				Message: fmt.Sprintf("--policy %s (%s) decided earlier sessions, not the last one: the pack describes the last session's, %s",
					in.PolicyName, given.Version(), p.LastPolicy)})
		}
		if len(p.Policies) > 1 {
			p.Findings = append(p.Findings, PackFinding{Rule: "several-policies", Severity: SevMedium, Where: "audit",
				Message: fmt.Sprintf("the sessions were decided under %d policy versions (%s); the pack describes the last session's, %s",
					len(p.Policies), strings.Join(p.Versions, ", "), p.LastPolicy)})
		}
	}
	return lintName, linted, nil
}

// listTools sets the pack's tools (called, listed or given a contract) and
// their annotations; it returns the tools the listings name and the list
// lint checks rules against (none when nothing was listed).
func (p *Pack) listTools(in PackInput) (listed, toolList []string) {
	pol := p.Policy
	for _, file := range sortedKeys(in.Tools) {
		for _, t := range in.Tools[file] {
			listed = append(listed, t.Name)
			p.Dests[t.Name] = append(p.Dests[t.Name], t.Dests...)
			p.Annots[t.Name] = append(p.Annots[t.Name], t.Hints...)
		}
	}
	// The tools called, listed (in a tools file or a session record) or
	// given a contract.
	tools := map[string]bool{}
	for n := range p.ByTool {
		tools[n] = true
	}
	for n := range p.ToolServers {
		tools[n] = true
	}
	for _, n := range listed {
		tools[n] = true
	}
	for _, n := range contractNames(pol.Spec()) {
		tools[n] = true
	}
	for n := range tools {
		p.ToolNames = append(p.ToolNames, n)
	}
	sort.Strings(p.ToolNames)
	if len(listed) > 0 {
		// A tool the logs show called was offered: a rule naming it can
		// match, whatever the tools files say.
		toolList = append(toolList, listed...)
		toolList = append(toolList, sortedKeys(p.ByTool)...)
		toolList = append(toolList, sortedKeys(p.ToolServers)...)
	}
	return listed, toolList
}

// lint adds the policy's lint findings; a line is kept only where it
// points at the file given.
func (p *Pack) lint(in PackInput, lintName string, linted *engine.Policy, toolList []string) error {
	// The listed tools with their schemas, so that a finding names the
	// arguments a glob takes out of them; by name alone, the tools only
	// the logs show.
	var listed []engine.ListedTool
	have := map[string]bool{}
	if toolList != nil {
		listed = []engine.ListedTool{}
		for _, file := range sortedKeys(in.Tools) {
			for _, t := range in.Tools[file] {
				listed, have[t.Name] = append(listed, t), true
			}
		}
	}
	for _, n := range toolList {
		if !have[n] {
			listed, have[n] = append(listed, engine.ListedTool{Name: n}), true
		}
	}
	lint, err := linted.Lint(listed)
	if err != nil {
		return err
	}
	for _, f := range lint {
		sev := SevMedium
		if f.Severity() == engine.SeverityHigh {
			sev = SevHigh
		}
		line := f.Line
		if linted != in.Given {
			line = 0 // a line of the canonical form points at no file
		}
		p.Findings = append(p.Findings, PackFinding{Rule: f.Kind, Severity: sev, Where: lintName, Line: line, Message: f.Message})
	}
	return nil
}

// auditFindings adds what the sessions show: listed tools no rule names,
// asks never answered, budgets spent.
func (p *Pack) auditFindings(listed []string, lintName string) {
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
}

// addLog adds one verified log's outcome: its status, how results name
// it, and what verify and reading it found.
func (p *Pack) addLog(l PackLog) {
	rep := l.Report
	p.Logs = append(p.Logs, LogStatus{File: l.Name, Result: verifyResult(rep), Records: rep.Records, Findings: len(rep.Findings), Unevaluable: len(rep.Unevaluable)})
	p.refs = append(p.refs, InputRef{File: l.Name, First: l.First, Records: rep.Records})
	for _, x := range rep.Findings {
		what := fmt.Sprintf("record %d", x.Seq)
		if x.Session != "" {
			what += ", session " + x.Session
		}
		if x.Call != "" {
			what += ", call " + x.Call
		}
		p.Findings = append(p.Findings, PackFinding{Rule: "verify-" + x.Kind, Severity: SevHigh, Where: l.Name, Line: int(x.Seq) + 1,
			Message: fmt.Sprintf("%s (%s): %s", what, x.Kind, x.Reason)})
	}
	if n := len(rep.Unevaluable); n > 0 {
		p.Findings = append(p.Findings, PackFinding{Rule: "unevaluable", Severity: SevLow, Where: l.Name,
			Message: fmt.Sprintf("%s cannot be recomputed: %s on redacted or purged inputs", counted(n, "decision"), verb(n, "it depended", "they depended"))})
	}
	if l.Read == nil {
		return
	}
	if l.Read.Err != nil {
		p.Findings = append(p.Findings, PackFinding{Rule: "unreadable", Severity: SevHigh, Where: l.Name, Message: l.Read.Err.Error()})
	}
	if l.NoEvidence && l.Read.HasOutput {
		// "ok" is then true of the chain and the verdicts that needed no
		// output, and nothing else: no output was read or checked.
		where := "no evidence store at " + l.EvidenceDir
		if l.Name == "-" {
			where = "it was read from standard input, with no evidence store"
		}
		p.Findings = append(p.Findings, PackFinding{Rule: "no-evidence", Severity: SevMedium, Where: l.Name,
			Message: where + ": no tool output was read, so an altered output could not be found, and every decision that depended on one is unevaluable"})
	}
}
