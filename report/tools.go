package report

import (
	"fmt"
	"sort"

	"bailiff/audit"
)

// maxShownTools bounds the tools the pack's charts and tables name; the
// rest are folded into one line, and listed in the appendix.
const maxShownTools = 20

// keyTools splits the tools that saw calls into those the pack names and
// the rest. Named first are the tools with a denial or an ask, most of
// those first; then the busiest; up to maxShownTools. A real fleet's log
// calls hundreds of tools once each, and a chart of them all shows none.
func (p *Pack) keyTools() (shown, rest []string) {
	tools := sortedKeys(p.ByTool)
	flagged := func(t string) int {
		m := p.ByTool[t]
		return m["deny"] + m["ask"] + m[audit.Answered]
	}
	sort.SliceStable(tools, func(i, j int) bool {
		a, b := tools[i], tools[j]
		if fa, fb := flagged(a), flagged(b); (fa > 0) != (fb > 0) || fa != fb {
			return fa > fb
		}
		return verdictSum(p.ByTool[a], verdicts) > verdictSum(p.ByTool[b], verdicts)
	})
	if len(tools) <= maxShownTools {
		return tools, nil
	}
	shown, rest = tools[:maxShownTools], tools[maxShownTools:]
	sort.Strings(shown)
	sort.Strings(rest)
	return shown, rest
}

// folded sums the calls of tools by verdict.
func (p *Pack) folded(tools []string) map[string]int {
	out := map[string]int{}
	for _, t := range tools {
		for v, n := range p.ByTool[t] {
			out[v] += n
		}
	}
	return out
}

// foldedLabel names the folded tools in a chart or a table.
func foldedLabel(n int) string {
	return fmt.Sprintf("(%d more tools)", n)
}

// mdAppendix lists every tool the pack folded, with its calls, when it
// folded any: the charts and tables name the ones that matter, and this
// keeps the whole count one search away.
func (p *Pack) mdAppendix(b *mdWriter) {
	_, rest := p.keyTools()
	if len(rest) == 0 {
		return
	}
	b.w("## Appendix: the other tools\n\n")
	b.w("The %s the tables above fold into one line, with their calls (allowed / denied / asked); bailiff calls --tool NAME lists a tool's calls.\n\n", counted(len(rest), "tool"))
	// One line each: a name is the server's to choose, and in a shared
	// line one holding ", " and counts could pass for two tools.
	for _, t := range rest {
		m := p.ByTool[t]
		b.w("- %s: %d/%d/%d\n", mdEscape(t), m["allow"], m["deny"], m["ask"]+m[audit.Answered])
	}
	b.w("\n")
}
