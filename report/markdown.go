package report

import (
	"bytes"
	"fmt"
	"maps"
	"sort"
	"strings"

	"bailiff/audit"
	"bailiff/engine"
)

// mdWriter is the Markdown pack being written, section by section.
type mdWriter struct{ bytes.Buffer }

func (b *mdWriter) w(format string, a ...any) { fmt.Fprintf(&b.Buffer, format, a...) }

func (b *mdWriter) table(head []string, rows [][]string) {
	_ = writeMarkdown(&b.Buffer, head, rows)
	b.WriteString("\n")
}

// mdIntro writes the title and the policy line.
func (p *Pack) mdIntro(b *mdWriter) {
	b.w("# bailiff review pack\n\n")
	switch p.PolicyFrom {
	case "given":
		b.w("Generated %s from %s under policy `%s` (%s), as given with --policy: no readable session records the policy it was decided under, so nothing shows it was this one.\n\n",
			p.generatedAt(), counted(len(p.Logs), "audit log"), mdEscape(p.In.PolicyName), p.Policy.Version())
	case "file":
		b.w("Generated %s from %s under policy `%s` (%s), the policy %s.\n\n",
			p.generatedAt(), counted(len(p.Logs), "audit log"), mdEscape(p.In.PolicyName), p.Policy.Version(), p.recordedBy())
	default:
		b.w("Generated %s from %s under the policy %s (%s).\n\n", p.generatedAt(), counted(len(p.Logs), "audit log"), p.recordedBy(), p.Policy.Version())
	}
	if len(p.Versions) > 1 {
		b.w("The sessions were decided under %d policy versions; the tools and controls below are the last session's.\n\n", len(p.Versions))
	}
	if c := p.Candidate; c != nil {
		b.w("**Candidate, not in force:** `%s` (%s), given with --policy, is not the policy any session was decided under. Nothing below describes it; `bailiff shadow --candidate` shows what it would change.\n\n",
			mdEscape(p.In.PolicyName), c.Version())
	}
}

// mdScope writes the period, sessions and each log's verify result.
func (p *Pack) mdScope(b *mdWriter) {
	b.w("## Scope and provenance\n\n")
	span := "no records in range"
	if !p.First.IsZero() {
		span = p.First.UTC().Format("2006-01-02 15:04:05Z") + " to " + p.Last.UTC().Format("2006-01-02 15:04:05Z")
	} else if p.Untimed > 0 {
		span = "unknown: no record carries a real time (a log made by bailiff record from traces without times)"
	}
	if p.Untimed > 0 && !p.First.IsZero() {
		span += fmt.Sprintf(" (%d records carry no real time and are not placed in it)", p.Untimed)
	}
	ckpt := "none given: a log cut short since it was written would not show (give --checkpoint)"
	if c := p.In.Checkpoint; c != nil {
		ckpt = fmt.Sprintf("the log was checked against a signed checkpoint of %d records by %s", c.Size, mdEscape(c.Origin))
	}
	b.w("- Period: %s\n- Sessions: %d; calls: %d\n- Policy versions: %s\n- Checkpoint: %s\n\n",
		span, p.Sessions, p.Calls, mdEscape(strings.Join(p.Versions, ", ")), ckpt)
	var rows [][]string
	for _, l := range p.Logs {
		rows = append(rows, []string{l.File, l.Result, fmt.Sprint(l.Records), fmt.Sprint(l.Findings), fmt.Sprint(l.Unevaluable)})
	}
	b.table([]string{"LOG", "VERIFY", "RECORDS", "FINDINGS", "UNEVALUABLE"}, rows)
}

// mdSummary writes the verdicts by tool, check and rule, the asks, and the destinations denied; with the Mermaid charts when mermaid is set.
func (p *Pack) mdSummary(b *mdWriter, mermaid bool) {
	var rows [][]string
	b.w("## Audit summary\n\n")
	if mermaid {
		p.mdCharts(b)
	}
	rows = nil
	shown, rest := p.keyTools()
	for _, t := range shown {
		m := p.ByTool[t]
		rows = append(rows, []string{t, fmt.Sprint(m["allow"]), fmt.Sprint(m["deny"]), fmt.Sprint(m["ask"] + m[audit.Answered])})
	}
	if len(rest) > 0 {
		m := p.folded(rest)
		rows = append(rows, []string{foldedLabel(len(rest)), fmt.Sprint(m["allow"]), fmt.Sprint(m["deny"]), fmt.Sprint(m["ask"] + m[audit.Answered])})
	}
	b.table([]string{"TOOL", "ALLOW", "DENY", "ASK"}, rows)
	if len(rest) > 0 {
		b.w("The tools with a denial or an ask come first, then the busiest, up to %d; the appendix lists the %s folded into the last line.\n\n", maxShownTools, counted(len(rest), "other tool"))
	}
	rows = nil
	checks := p.ByCheck
	if p.Settled > 0 {
		checks = maps.Clone(p.ByCheck)
		checks[string(engine.CheckApproval)] = p.decisions(string(engine.CheckApproval))
	}
	for _, c := range sortedKeys(checks) {
		rows = append(rows, []string{c, fmt.Sprint(checks[c])})
	}
	b.table([]string{"DECIDED BY CHECK", "DECISIONS"}, rows)
	if checks[string(engine.CheckApproval)] != p.ByCheck[string(engine.CheckApproval)] {
		b.w("A call's verdict above is its final one: an answered ask is counted by its answer. An answered ask is two decisions: by the check that asked, and by approval, which answered it.\n\n")
	}
	rows = nil
	for _, r := range sortedKeys(p.ByRule) {
		rows = append(rows, []string{r, fmt.Sprint(p.ByRule[r])})
	}
	b.table([]string{"RULE", "CALLS"}, rows)
	b.w("Asks: %d approved, %d declined, %d unanswered. Calls with redacted arguments: %d.\n\n",
		p.Asks["approved"], p.Asks["declined"], p.Asks["unanswered"], p.Redacted)
	if len(p.DeniedTo) > 0 {
		dests := sortedKeys(p.DeniedTo)
		sort.SliceStable(dests, func(i, j int) bool { return p.DeniedTo[dests[i]] > p.DeniedTo[dests[j]] })
		if len(dests) > 10 {
			dests = dests[:10]
		}
		rows = nil
		for _, d := range dests {
			rows = append(rows, []string{strings.Join(p.DestRaw[d], " / "), fmt.Sprint(p.DeniedTo[d])})
		}
		b.table([]string{"TOP DENIED DESTINATIONS", "CALLS"}, rows)
	}
	p.mdActors(b)
}

// mdFindings writes the findings by severity.
func (p *Pack) mdFindings(b *mdWriter) {
	var rows [][]string
	b.w("## Findings\n\n")
	if len(p.Findings) == 0 {
		b.w("None.\n\n")
	} else {
		rows = nil
		for _, f := range p.Findings {
			where := f.Where
			if f.Line > 0 {
				where += fmt.Sprintf(":%d", f.Line)
			}
			rows = append(rows, []string{sevWord(f.Severity), f.Rule, where, f.Message})
		}
		b.table([]string{"SEVERITY", "FINDING", "WHERE", "WHAT"}, rows)
		p.mdAdvice(b)
	}
}

// mdResults writes the shadow and ablation results, when given.
func (p *Pack) mdResults(b *mdWriter) {
	if r := p.In.shadow; r != nil {
		b.w("## Policy change (shadow)\n\n")
		if ok, notes := r.summary.verified(); !ok {
			b.w("> **UNVERIFIED**: this shadow result was run with --allow-unverified over logs that fail verify: %s\n\n", mdEscape(strings.Join(notes, "; ")))
		}
		rows := [][]string{{fmt.Sprint(r.summary.Calls)}}
		head := []string{"CALLS"}
		for _, c := range []string{"unchanged", "newly-denied", "newly-asked", "newly-allowed", "unevaluable"} {
			head = append(head, strings.ToUpper(c))
			rows[0] = append(rows[0], fmt.Sprint(r.summary.Counts[c]))
		}
		b.table(head, rows)
		if c := r.summary.Candidate; c != nil {
			name := ""
			if c.Name != "" {
				name = ", named " + mdEscape(c.Name)
			}
			b.w("Candidate policy: %s%s, version %s.\n\n", mdEscape(c.File), name, mdEscape(c.Version))
		} else {
			b.w("Candidate policy: not named by the result (give the output of this bailiff's shadow --format json).\n\n")
		}
		changed := r.summary.Calls - r.summary.Counts["unchanged"]
		if ex := r.examples; len(ex) > 0 {
			switch {
			case r.listed < changed:
				b.w("%d of the %d changed calls are shown below: the result lists at most its --examples of each kind (bailiff shadow without --examples lists every one).\n\n", len(ex), changed)
			case len(ex) < changed:
				b.w("%d of the %d changed calls are shown below, the first by log and record; the shadow result lists every one, with its arguments whole.\n\n", len(ex), changed)
			}
			rows = nil
			for _, e := range ex {
				rows = append(rows, []string{e.Category, e.Session, e.Call, e.Tool, e.Baseline, e.Candidate, truncate(e.argsText(), maxArgsCell), e.Reason})
			}
			b.table([]string{"CHANGED", "SESSION", "CALL", "TOOL", "RECORDED", "CANDIDATE", "ARGUMENTS", "WHY"}, rows)
		}
	}
	if r := p.In.ablation; r != nil {
		tot := &r.totals
		b.w("## Ablation\n\n")
		if ok, notes := tot.verified(); !ok {
			b.w("> **UNVERIFIED**: this ablation result was run with --allow-unverified over logs that fail verify: %s\n\n", mdEscape(strings.Join(notes, "; ")))
		}
		var rows [][]string
		for _, l := range r.checks {
			state := ablationState(l.Dead, l.NothingAlone)
			if l.Changed == 0 && l.Decided == 0 && l.Unevaluable > 0 {
				state = "unmeasured" // from its counts, as ablate says it
			}
			rows = append(rows, []string{l.Check, fmt.Sprint(l.Decided), fmt.Sprint(l.Changed), fmt.Sprint(l.StopsAlone), fmt.Sprint(l.Costs), state})
		}
		b.table([]string{"CHECK OFF", "DECIDED", "CHANGED", "ATTACKS STOPPED ALONE", "BENIGN COST", "STATE"}, rows)
		// A rate over no calls is no measurement, whatever number the
		// JSON holds for it.
		block, loss := "no block rate (no call is labelled an attack)", "no benign loss (no call is labelled benign)"
		if tot.Attacks > 0 {
			block = fmt.Sprintf("block rate %.2f over %s", tot.BlockRate, counted(tot.Attacks, "attack call"))
		}
		if tot.Benign > 0 {
			loss = fmt.Sprintf("benign loss %.2f over %s", tot.BenignLoss, counted(tot.Benign, "benign call"))
		}
		b.w("%s; %s.\n\n", strings.ToUpper(block[:1])+block[1:], loss)
	}
}

// mdCoverage writes what the gateway covers and the OWASP mapping.
func (p *Pack) mdCoverage(b *mdWriter) {
	var rows [][]string
	b.w("## What the gateway covers\n\n%s\n\n", coverage)

	b.w("## OWASP mapping\n\n")
	for _, l := range owasp {
		b.w("### %s\n\n", l.list)
		rows = nil
		for _, r := range l.rows {
			ev := "-"
			if len(r.checks) > 0 {
				n := 0
				for _, c := range r.checks {
					n += p.decisions(c)
				}
				ev = fmt.Sprintf("%s by %s", counted(n, "decision"), strings.Join(r.checks, ", "))
			}
			rows = append(rows, []string{r.id, r.risk, r.controls, ev})
		}
		b.table([]string{"ID", "RISK", "BAILIFF CONTROL", "EVIDENCE IN THIS PERIOD"}, rows)
	}
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

func orNone(l []string) string { return orWord(l, "none") }

func orWord(l []string, none string) string {
	if len(l) == 0 {
		return none
	}
	return strings.Join(l, ", ")
}
