package report

import (
	"fmt"
	"strings"

	"bailiff/audit"
)

// Checkpoint is what the pack says of a signed checkpoint a log was
// verified against: how many records it covers, and whose it is.
type Checkpoint struct {
	Size   int64
	Origin string
}

// status is the pack's conclusion, in one word: "tampered" when a log
// fails verify (it is not what the gateway wrote, or its verdicts do not
// recompute), "findings" when something else needs a look, or "clean".
func (p *Pack) status() (word, why string) {
	failed := 0
	for _, l := range p.Logs {
		if l.Result != "ok" {
			failed++
		}
	}
	switch {
	case failed > 0:
		return "tampered", fmt.Sprintf("%s of %d %s verify: what %s is not what the gateway wrote, or %s verdicts do not recompute; nothing below can be taken on its word",
			counted(failed, "log"), len(p.Logs), verb(failed, "fails", "fail"), verb(failed, "it records", "they record"), verb(failed, "its", "their"))
	case len(p.Findings) > 0:
		return "findings", fmt.Sprintf("every log verifies; %s below %s a look", counted(len(p.Findings), "finding"), verb(len(p.Findings), "needs", "need"))
	}
	return "clean", "every log verifies, every recorded verdict recomputes, and there is no finding"
}

// resultsFit refuses a shadow or ablate result whose call count is not
// the logs' own: it names these logs (sameResults), so over the whole of
// them it counted the calls the pack counts. A period makes the pack
// count fewer, and is not compared.
func (p *Pack) resultsFit(in PackInput) error {
	if !in.Since.IsZero() || !in.Until.IsZero() {
		return nil
	}
	if r := in.shadow; r != nil && r.summary.Calls != p.Calls {
		return fmt.Errorf("--shadow %s counts %d calls, and the logs hold %d", in.ShadowFile, r.summary.Calls, p.Calls)
	}
	if r := in.ablation; r != nil && r.totals.Calls != p.Calls {
		return fmt.Errorf("--ablate %s counts %d calls, and the logs hold %d", in.AblateFile, r.totals.Calls, p.Calls)
	}
	return nil
}

// resultFindings adds what the given results say needs a look: labelled
// attacks the policy let through.
func (p *Pack) resultFindings() {
	if p.In.ablation == nil {
		return
	}
	tot := &p.In.ablation.totals
	if through := tot.Attacks - tot.AttacksStopped; through > 0 {
		p.Findings = append(p.Findings, PackFinding{Rule: "attack-not-stopped", Severity: SevHigh, Where: p.In.AblateFile,
			Message: fmt.Sprintf("%s of %s labelled attacks %s not stopped by the policy: allowed, or asked and approved%s", counted(through, "call"), fmt.Sprint(tot.Attacks), verb(through, "was", "were"), throughText(p.In.ablation.through))})
	}
}

// mdStatus leads the pack with its answer and the counts that matter.
func (p *Pack) mdStatus(b *mdWriter) {
	word, why := p.status()
	b.w("**Status: %s.** %s.\n\n", strings.ToUpper(word), strings.ToUpper(why[:1])+why[1:])
	sev := map[string]int{}
	for _, f := range p.Findings {
		sev[f.Severity]++
	}
	b.w("- Findings: %d high, %d medium, %d low\n", sev[SevHigh], sev[SevMedium], sev[SevLow])
	b.w("- Calls: %d in %s: %d allowed, %d denied, %d held at an ask (not forwarded)\n",
		p.Calls, counted(p.Sessions, "session"), p.total("allow"), p.total("deny"), p.total("ask")+p.total(audit.Answered))
	b.w("- Attacks stopped: %s\n", p.attacksLine())
	asks := p.Asks["approved"] + p.Asks["declined"] + p.Asks["unanswered"]
	b.w("- Asks: %d: %d approved, %d declined, %d unanswered\n", asks, p.Asks["approved"], p.Asks["declined"], p.Asks["unanswered"])
	unevaluable := 0
	for _, l := range p.Logs {
		unevaluable += l.Unevaluable
	}
	b.w("- Unevaluable decisions: %d (decisions that depended on redacted or purged input)\n", unevaluable)
	if c := p.In.Checkpoint; c != nil {
		b.w("- Truncation: checked against a signed checkpoint of %s\n\n", counted(int(c.Size), "record"))
	} else {
		b.w("- Truncation: not checked: no checkpoint was given, and a log cut short since it was written verifies as what remains\n\n")
	}
}

// attacksLine is what the pack knows of attacks: only labelled calls say
// which calls were attacks, so without an ablation over labels it gives
// the denials and says that is all it knows.
func (p *Pack) attacksLine() string {
	denied := counted(p.total("deny"), "call") + " denied"
	if p.In.ablation == nil {
		return "not measured: no call is labelled (bailiff ablate --labels measures it); " + denied
	}
	tot := &p.In.ablation.totals
	if tot.Attacks == 0 {
		return "not measured: the ablation labels no call an attack; " + denied
	}
	s := fmt.Sprintf("%d of %s (block rate %.2f); %d of %s stopped too",
		tot.AttacksStopped, counted(tot.Attacks, "labelled attack call"), tot.BlockRate, tot.BenignStopped, counted(tot.Benign, "benign call"))
	if ok, _ := tot.verified(); !ok {
		s += " (UNVERIFIED: the ablation ran over logs that fail verify)"
	}
	if !p.In.Since.IsZero() || !p.In.Until.IsZero() {
		s += " (over the ablation's whole logs, not only the period above)"
	}
	return s
}

// mdTools writes the tools with the controls that apply to them: every
// tool with a contract or an annotation, and the tools the summary names.
// The others are folded, by the rule that decides them: a row of dashes
// per tool says nothing, and a fleet's log calls hundreds of tools.
func (p *Pack) mdTools(b *mdWriter) {
	b.w("## Tools and their controls\n\n")
	shown, _ := p.keyTools()
	named := map[string]bool{}
	for _, t := range shown {
		named[t] = true
	}
	var rows [][]string
	quiet := map[string][]string{} // rule -> tools that saw no calls
	called := map[string]int{}     // rule -> tools that saw calls
	var order []string
	for _, t := range p.ToolNames {
		rule, budget, path, pat, sink := p.controls(t)
		annots := strings.Join(p.Annots[t], ", ")
		if !named[t] && budget == "-" && path == "-" && pat == "-" && sink == "-" && annots == "" {
			if quiet[rule] == nil && called[rule] == 0 {
				order = append(order, rule)
			}
			if p.ByTool[t] != nil {
				called[rule]++
			} else {
				quiet[rule] = append(quiet[rule], t)
			}
			continue
		}
		rows = append(rows, []string{t, rule, budget, path, pat, sink, annots})
	}
	if len(rows) > 0 {
		b.table([]string{"TOOL", "RULE", "BUDGET", "PATH CONFINEMENT", "PATTERNS", "SINK GATE", "ANNOTATIONS"}, rows)
	}
	if len(order) == 0 {
		return
	}
	var parts []string
	n := 0
	for _, r := range order {
		var what []string
		if c := called[r]; c > 0 {
			what = append(what, counted(c, "tool")+" that saw calls, counted in the summary and its appendix")
		}
		if q := quiet[r]; len(q) > 0 {
			what = append(what, mdEscape(strings.Join(q, ", ")))
		}
		n += called[r] + len(quiet[r])
		parts = append(parts, strings.Join(what, " and ")+" (rule: "+mdEscape(r)+")")
	}
	b.w("%s no contract (the rules decide %s, and an argument that looks like a destination is still gated): %s.\n\n",
		counted(n, "more tool")+" "+verb(n, "has", "have"), verb(n, "it", "them"), strings.Join(parts, "; "))
}

// mdCharts writes the two charts as Mermaid: verdicts over time, and by
// tool. Labels are reduced to characters that cannot end a label or the
// block, since tool names are a server's to choose.
func (p *Pack) mdCharts(b *mdWriter) {
	grain, buckets, counts := p.Over.Finest()
	if len(buckets) > 0 {
		b.w("```mermaid\nxychart-beta\n    title \"Calls per %s (bars); denied (line)\"\n    x-axis [%s]\n", grain, chartLabels(buckets))
		b.w("    bar [%s]\n    line [%s]\n```\n\n", series(buckets, counts, verdicts...), series(buckets, counts, "deny"))
	}
	tools, counts := p.chartTools()
	if len(tools) > 0 {
		b.w("```mermaid\nxychart-beta horizontal\n    title \"Calls by tool (bars) and denied (line)\"\n    x-axis [%s]\n", chartLabels(tools))
		b.w("    bar [%s]\n    line [%s]\n```\n\n", series(tools, counts, verdicts...), series(tools, counts, "deny"))
	}
}

// chartTools are the bars of the chart by tool, and their counts: the
// tools keyTools names, then the rest folded into one bar.
func (p *Pack) chartTools() ([]string, map[string]map[string]int) {
	shown, rest := p.keyTools()
	if len(rest) == 0 {
		return shown, p.ByTool
	}
	counts := map[string]map[string]int{}
	for _, t := range shown {
		counts[t] = p.ByTool[t]
	}
	label := foldedLabel(len(rest))
	counts[label] = p.folded(rest)
	return append(shown, label), counts
}

// series is the sum of the verdicts named, per key, as a Mermaid list.
func series(keys []string, counts map[string]map[string]int, of ...string) string {
	out := make([]string, len(keys))
	for i, k := range keys {
		n := 0
		for _, v := range of {
			n += counts[k][v]
		}
		out[i] = fmt.Sprint(n)
	}
	return strings.Join(out, ", ")
}

func chartLabels(keys []string) string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = `"` + chartLabel(k) + `"`
	}
	return strings.Join(out, ", ")
}

// chartLabel keeps letters, digits and a few marks, and shortens.
func chartLabel(s string) string {
	var b strings.Builder
	for _, r := range truncate(s, 28) {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', strings.ContainsRune(" _-.:/…", r):
			b.WriteRune(r)
		default:
			b.WriteByte('?')
		}
	}
	return b.String()
}

// throughText names the attack calls let through, the first five, for a
// finding's message.
func throughText(calls []throughLine) string {
	if len(calls) == 0 {
		return " (the ablation result names no call: run this bailiff's ablate --format json)"
	}
	var parts []string
	for i, c := range calls {
		if i == 5 {
			parts = append(parts, fmt.Sprintf("and %d more", len(calls)-5))
			break
		}
		parts = append(parts, fmt.Sprintf("session %s, call %s (%s, %s)", c.Session, c.Call, c.Tool, c.Verdict))
	}
	return ": " + strings.Join(parts, "; ")
}
