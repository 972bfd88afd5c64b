package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"bailiff/audit"
	"bailiff/engine"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
)

// verdicts are the final verdicts a summary counts calls by, as the
// charts stack them: a call held at an ask is answered (out of band) or
// never answered (ask).
var verdicts = []string{"allow", "deny", audit.Answered, "ask"}

// coverage is what bailiff covers and what it does not.
const coverage = `**Covered**, for every call that goes through bailiff: the tool must be pinned
(listed, with an unchanged definition), a rule must allow or ask for it (nothing else
gets through), per-tool budgets, path confinement and argument patterns hold, and
destinations read in untrusted tool output cannot be sent to; each decision is logged
before the call is forwarded and can be recomputed from the log.

**Not covered**: calls made outside bailiff (servers the client reaches directly, or
over HTTP), what a server does with an allowed call, what the model says to the user,
prompt injection as such (bailiff limits what a fooled agent can do; it does not
detect the injection), data sent through a destination the policy trusts, and
server-to-client requests (sampling, roots) other than elicitation.`

// owaspRow maps one risk to the bailiff controls that address it and the
// checks whose decisions are its evidence.
type owaspRow struct {
	id, risk, controls string
	checks             []string
}

var owasp = []struct {
	list string
	rows []owaspRow
}{
	{"OWASP Top 10 for LLM Applications 2025", []owaspRow{
		{"LLM01", "Prompt Injection", "taint sink gate: destinations read in untrusted output are denied (or asked), unknown ones asked", []string{"taint"}},
		{"LLM02", "Sensitive Information Disclosure", "sink gate, trusted destinations, redaction of logged arguments", []string{"taint"}},
		{"LLM03", "Supply Chain", "tool pinning: new or changed tool definitions are denied", []string{"pinning"}},
		{"LLM04", "Data and Model Poisoning", "not covered", nil},
		{"LLM05", "Improper Output Handling", "calls forwarded re-encoded from checked arguments; path confinement, argument patterns", []string{"path", "pattern"}},
		{"LLM06", "Excessive Agency", "default-deny firewall, scopes, human approval of asked calls", []string{"rules", "default-deny", "scopes", "approval"}},
		{"LLM07", "System Prompt Leakage", "not covered", nil},
		{"LLM08", "Vector and Embedding Weaknesses", "not covered", nil},
		{"LLM09", "Misinformation", "not covered", nil},
		{"LLM10", "Unbounded Consumption", "per-tool call budgets; tenant ceilings per window and rate limits, across sessions", []string{"budget", "tenant-budget", "rate"}},
	}},
	{"OWASP Top 10 for Agentic Applications 2026", []owaspRow{
		{"ASI01", "Agent Goal Hijack", "sink gate limits what a hijacked agent can send", []string{"taint"}},
		{"ASI02", "Tool Misuse and Exploitation", "rules, path confinement, argument patterns, budgets", []string{"rules", "path", "pattern", "budget"}},
		{"ASI03", "Identity and Privilege Abuse", "rules scoped to the principal's scopes; approvers never the requester", []string{"scopes", "approval"}},
		{"ASI04", "Agentic Supply Chain Vulnerabilities", "tool pinning (rug pulls denied until a human accepts them)", []string{"pinning"}},
		{"ASI05", "Unexpected Code Execution", "default deny; path confinement of written files", []string{"default-deny", "path"}},
		{"ASI06", "Memory & Context Poisoning", "partly: outputs taint later sends for the whole session", []string{"taint"}},
		{"ASI07", "Insecure Inter-Agent Communication", "not covered", nil},
		{"ASI08", "Cascading Failures", "every decision logged before forwarding; verify recomputes them", nil},
		{"ASI09", "Human-Agent Trust Exploitation", "approvals bound to the exact call, single use, expiring", []string{"approval"}},
		{"ASI10", "Rogue Agents", "default deny and a tamper-evident log of everything attempted", []string{"default-deny"}},
	}},
	{"OWASP MCP Top 10", []owaspRow{
		{"MCP01", "Token Mismanagement & Secret Exposure", "redaction keeps secrets out of the log; grants bind to keyed digests", nil},
		{"MCP02", "Privilege Escalation via Scope Creep", "rules require the principal's scopes", []string{"scopes"}},
		{"MCP03", "Tool Poisoning", "tool pinning by definition digest", []string{"pinning"}},
		{"MCP04", "Software Supply Chain Attacks", "partly: a changed server's tools are denied until accepted", []string{"pinning"}},
		{"MCP05", "Command Injection & Execution", "argument patterns, path confinement", []string{"pattern", "path"}},
		{"MCP06", "Intent Flow Subversion", "sink gate on destinations from tool output", []string{"taint"}},
		{"MCP07", "Insufficient Authentication & Authorization", "per-principal rules and scopes", []string{"rules", "scopes"}},
		{"MCP08", "Lack of Audit and Telemetry", "hash-chained audit log, checkpoints, verify", nil},
		{"MCP09", "Shadow MCP Servers", "partly: bailiff init puts a client's servers behind bailiff", nil},
		{"MCP10", "Context Injection & Over-Sharing", "trusted sources; hidden tools; sink gate", []string{"taint"}},
	}},
}

// Markdown writes the pack.
func (p *Pack) Markdown() []byte { return p.markdown(true) }

// markdown writes the pack, with the Mermaid charts or without them (the
// HTML draws its own chart, and would show their source as text).
func (p *Pack) markdown(mermaid bool) []byte {
	// The answer first, then what needs a look, then the evidence.
	var b mdWriter
	p.mdIntro(&b)
	p.mdStatus(&b)
	p.mdFindings(&b)
	p.mdFlagged(&b)
	p.mdSummary(&b, mermaid)
	p.mdTenants(&b, mermaid)
	p.mdResults(&b)
	p.mdScope(&b)
	p.mdTools(&b)
	p.mdCoverage(&b)
	p.mdGlossary(&b)
	p.mdAppendix(&b)
	return b.Bytes()
}

func sevWord(s string) string {
	switch s {
	case SevHigh:
		return "high"
	case SevMedium:
		return "medium"
	}
	return "low"
}

// decisions counts the decisions a check made: the calls it decided and,
// for approval, the answers that settled asks (an answered ask is two
// decisions: the check that asked, and the approval that answered).
func (p *Pack) decisions(check string) int {
	n := p.ByCheck[check]
	if check == string(engine.CheckApproval) {
		n += p.Settled
	}
	return n
}

func (p *Pack) total(v string) int {
	n := 0
	for _, m := range p.ByTool {
		n += m[v]
	}
	return n
}

// recordedBy says whose policy the pack describes: every session's, or
// with several, the last session's.
func (p *Pack) recordedBy() string {
	if len(p.Versions) > 1 {
		return "the last session records"
	}
	return "the sessions record"
}

func (p *Pack) generatedAt() string {
	if p.In.GeneratedAt != "" {
		return p.In.GeneratedAt
	}
	if p.Last.IsZero() {
		return "(no record carries a real time)"
	}
	return p.Last.UTC().Format("2006-01-02")
}

// HTML renders the Markdown pack with GFM tables and no raw HTML (audit content
// is attacker-controlled), under a content security policy that allows no
// script at all, with the charts as inline SVG.
func (p *Pack) HTML() ([]byte, error) {
	// GFM's tables and strikethrough, but not its linkify: a URL from the
	// audit content is the attacker's, and stays text, not a link.
	// Headings get ids, so a finding can link to the calls it is about.
	md := goldmark.New(goldmark.WithExtensions(extension.Table, extension.Strikethrough), goldmark.WithParserOptions(parser.WithAutoHeadingID()))
	var body bytes.Buffer
	if err := md.Convert(p.markdown(false), &body); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n")
	b.WriteString("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n")
	b.WriteString("<title>bailiff review pack</title>\n<style>body{font-family:sans-serif;max-width:72em;margin:2em auto;padding:0 1em}" +
		"table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #bbb;padding:.2em .5em;text-align:left;vertical-align:top}" +
		"pre{background:#f4f4f4;padding:.5em}svg{margin:1em 0}</style>\n</head><body>\n")
	// The chart goes under the audit summary's heading.
	head := []byte("<h2 id=\"audit-summary\">Audit summary</h2>\n")
	if i := bytes.Index(body.Bytes(), head); i >= 0 {
		b.Write(body.Bytes()[:i+len(head)])
		b.WriteString(p.svgTimeline())
		b.WriteString(p.svg())
		b.Write(body.Bytes()[i+len(head):])
	} else {
		// Every pack has the heading: a pack without its charts would
		// pass for one drawn with nothing to draw.
		return nil, errors.New("the pack has no audit summary to draw its charts under")
	}
	out := b.Bytes()
	// The tenants' charts go under their heading, when there is one.
	tenants := []byte("<h2 id=\"tenant-spending\">Tenant spending</h2>\n")
	if i := bytes.Index(out, tenants); i >= 0 {
		out = slices.Concat(out[:i+len(tenants)], []byte(p.svgTenants()), out[i+len(tenants):])
	}
	out = append(out, "</body></html>\n"...)
	return out, nil
}

// svg draws the verdicts per tool as horizontal bars. Every string in it
// is escaped; every number is computed.
func (p *Pack) svg() string {
	tools, counts := p.chartTools()
	if len(tools) == 0 {
		return ""
	}
	max := 1
	for _, t := range tools {
		if n := verdictSum(counts[t], verdicts); n > max {
			max = n
		}
	}
	var b strings.Builder
	h := 48 + 22*len(tools)
	fmt.Fprintf(&b, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"720\" height=\"%d\" role=\"img\" aria-label=\"Verdicts by tool\">\n", h)
	b.WriteString("<text x=\"0\" y=\"16\" font-size=\"14\">Verdicts by tool</text>\n")
	b.WriteString(legend)
	for i, t := range tools {
		y := 44 + 22*i
		fmt.Fprintf(&b, "<text x=\"0\" y=\"%d\" font-size=\"12\">%s</text>\n", y+14, html.EscapeString(plain(truncate(t, 28))))
		x := 220
		for _, v := range verdicts {
			wd := 480 * counts[t][v] / max
			if wd > 0 {
				fmt.Fprintf(&b, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"18\" fill=\"%s\"/>\n", x, y, wd, colors[v])
				x += wd
			}
		}
	}
	b.WriteString("</svg>\n")
	return b.String()
}

var colors = map[string]string{"allow": "#4a8", "deny": "#c44", audit.Answered: "#78b", "ask": "#da3"}

// verdictSum is the calls of counts with any of the verdicts vs.
func verdictSum(counts map[string]int, vs []string) int {
	n := 0
	for _, v := range vs {
		n += counts[v]
	}
	return n
}

// legend is the charts' key, under their titles.
const legend = `<rect x="0" y="24" width="12" height="12" fill="#4a8"/><text x="16" y="34" font-size="12">allowed</text>` +
	`<rect x="80" y="24" width="12" height="12" fill="#c44"/><text x="96" y="34" font-size="12">denied</text>` +
	`<rect x="156" y="24" width="12" height="12" fill="#da3"/><text x="172" y="34" font-size="12">asked, never answered</text>` +
	`<rect x="330" y="24" width="12" height="12" fill="#78b"/><text x="346" y="34" font-size="12">asked, answered out of band</text>` + "\n"

// svgTimeline draws the verdicts over time as stacked columns, one per
// bucket of the finest grain whose span fits.
func (p *Pack) svgTimeline() string {
	grain, buckets, counts := p.Over.Finest()
	if len(buckets) == 0 {
		return ""
	}
	max := 1
	for _, k := range buckets {
		if n := verdictSum(counts[k], verdicts); n > max {
			max = n
		}
	}
	// A column is at most maxColumn wide: a span of one bucket (every
	// call in one second) is a column, not a block the width of the page.
	const top, height, width, maxColumn = 44, 120, 700, 40
	col := min(max1(width/len(buckets)), maxColumn)
	var b strings.Builder
	fmt.Fprintf(&b, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"720\" height=\"%d\" role=\"img\" aria-label=\"Verdicts over time\">\n", top+height+36)
	if len(buckets) == 1 {
		fmt.Fprintf(&b, "<text x=\"0\" y=\"16\" font-size=\"14\">Verdicts: every call in one %s (%s)</text>\n", grain, html.EscapeString(counted(max, "call")))
	} else {
		fmt.Fprintf(&b, "<text x=\"0\" y=\"16\" font-size=\"14\">Verdicts per %s; the tallest column is %s</text>\n", grain, html.EscapeString(counted(max, "call")))
	}
	b.WriteString(legend)
	for i, k := range buckets {
		y := top + height
		for _, v := range []string{"allow", audit.Answered, "ask", "deny"} {
			ht := height * counts[k][v] / max
			if ht > 0 {
				y -= ht
				fmt.Fprintf(&b, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"/>\n", 10+i*col, y, max1(col-2), ht, colors[v])
			}
		}
	}
	fmt.Fprintf(&b, "<text x=\"10\" y=\"%d\" font-size=\"12\">%s</text>\n", top+height+16, html.EscapeString(buckets[0]))
	if len(buckets) > 1 {
		fmt.Fprintf(&b, "<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"end\">%s</text>\n", 10+len(buckets)*col, top+height+16, html.EscapeString(buckets[len(buckets)-1]))
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func max1(n int) int { return max(n, 1) }

// truncate shortens s to at most n characters, marking the cut. It cuts
// before any escaping, so an escape is never split.
func truncate(s string, n int) string {
	if len(s) <= n || utf8.RuneCountInString(s) <= n {
		return s
	}
	// As []rune would: a byte that is not UTF-8 counts as one character
	// and is kept as U+FFFD.
	var b strings.Builder
	b.Grow(n + 3)
	i := 0
	for _, r := range s {
		if i == n-1 {
			break
		}
		b.WriteRune(r)
		i++
	}
	return b.String() + "…"
}

// SARIF writes the findings as SARIF 2.1.0, for code scanning.
func (p *Pack) SARIF() []byte {
	type msg struct {
		Text string `json:"text"`
	}
	type rule struct {
		ID               string `json:"id"`
		ShortDescription msg    `json:"shortDescription"`
	}
	type region struct {
		StartLine int `json:"startLine"`
	}
	type physical struct {
		ArtifactLocation struct {
			URI string `json:"uri"`
		} `json:"artifactLocation"`
		Region *region `json:"region,omitempty"`
	}
	type location struct {
		PhysicalLocation physical `json:"physicalLocation"`
	}
	type result struct {
		RuleID    string     `json:"ruleId"`
		Level     string     `json:"level"`
		Message   msg        `json:"message"`
		Locations []location `json:"locations"`
	}
	seen := map[string]bool{}
	var rules []rule
	var results []result
	for _, f := range p.Findings {
		if !seen[f.Rule] {
			seen[f.Rule] = true
			rules = append(rules, rule{ID: f.Rule, ShortDescription: msg{Text: strings.ReplaceAll(f.Rule, "-", " ")}})
		}
		var loc location
		loc.PhysicalLocation.ArtifactLocation.URI = f.Where
		if f.Line > 0 {
			loc.PhysicalLocation.Region = &region{StartLine: f.Line}
		}
		results = append(results, result{RuleID: f.Rule, Level: f.Severity, Message: msg{Text: f.Message}, Locations: []location{loc}})
	}
	sort.Slice(rules, func(i, j int) bool { return rules[i].ID < rules[j].ID })
	if rules == nil {
		rules = []rule{} // SARIF requires an array, even an empty one
	}
	if results == nil {
		results = []result{}
	}
	doc := map[string]any{
		"$schema": "https://json.schemastore.org/sarif-2.1.0.json",
		"version": "2.1.0",
		"runs": []any{map[string]any{
			"tool":    map[string]any{"driver": map[string]any{"name": "bailiff", "rules": rules}},
			"results": results,
		}},
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	_ = enc.Encode(doc)
	return b.Bytes()
}
