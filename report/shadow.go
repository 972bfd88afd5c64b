package report

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"bailiff/shadow"
)

type shadowSummary struct {
	Type   string         `json:"type"`
	Calls  int            `json:"calls"`
	Counts map[string]int `json:"counts"`
	// Candidate is the policy the calls were scored under, so a pack
	// given the result can say which change it measured.
	Candidate *PolicyRef `json:"candidate,omitempty"`
	// CandidateIdentity names the identity settings whose group mapping
	// the candidate acted under, if not the recorded one.
	CandidateIdentity string `json:"candidate_identity,omitempty"`
	unverifiedFields
}

// PolicyRef names a policy as it was given: its file, the name its
// name: key gives it, and its version (the canonical form's hash).
type PolicyRef struct {
	File    string `json:"file"`
	Name    string `json:"name,omitempty"`
	Version string `json:"version"`
}

// unverifiedFields mark a result whose baseline includes logs that fail
// verify: verified is always written, so a reader that checks it never
// mistakes an old or partial line for a verified one. The writer and the
// pack's reader share these types: a field the reader must find is a
// pointer, nil when a line does not carry it.
type unverifiedFields struct {
	Verified   *bool    `json:"verified"`
	Unverified []string `json:"unverified,omitempty"`
	// Inputs name what the result was computed over, so a review pack
	// given it can tell whether it is about the pack's own logs.
	Inputs *[]InputRef `json:"inputs"`
}

// verified reads the mark: whether the baseline was verified, and the
// notes of the logs that were not.
func (u unverifiedFields) verified() (bool, []string) {
	return u.Verified != nil && *u.Verified, u.Unverified
}

// Provenance is what a shadow or ablation result was computed over: the
// notes of logs that failed verify and were used anyway, and the inputs.
type Provenance struct {
	Unverified []string
	Inputs     []InputRef
	Candidate  *PolicyRef // shadow's candidate policy
	// CandidateIdentity names the identity settings that regranted the
	// candidate's scopes, if any.
	CandidateIdentity string
}

// InputRef names one input of a result: a log by the hash of its first
// line and its record count (which together tell it from any other log,
// and from itself grown or cut), a trace as a trace.
type InputRef struct {
	File    string `json:"file"`
	First   string `json:"first,omitempty"`
	Records int64  `json:"records,omitempty"`
	Trace   bool   `json:"trace,omitempty"`
	// Root is the verified records' Merkle root: a second read of the
	// log that ends on another is of a log rewritten in between.
	Root [32]byte `json:"-"`
	// Bytes is how much of the file verify read: all a second read may.
	Bytes int64 `json:"-"`
}

func unverifiedOf(p Provenance) unverifiedFields {
	inputs := p.Inputs
	if inputs == nil {
		inputs = []InputRef{}
	}
	verified := len(p.Unverified) == 0
	return unverifiedFields{Verified: &verified, Unverified: p.Unverified, Inputs: &inputs}
}

// writeUnverified puts the statement first, where nobody reads the
// numbers without it.
func writeUnverified(b *strings.Builder, f Format, notes []string) {
	if len(notes) == 0 {
		return
	}
	const what = "UNVERIFIED: run with --allow-unverified over logs that fail bailiff verify; their recorded history is taken as it is, forged verdicts included"
	if f == Markdown {
		fmt.Fprintf(b, "> **%s**\n", what)
		for _, n := range notes {
			fmt.Fprintf(b, ">\n> - %s\n", mdEscape(n))
		}
		b.WriteString("\n")
		return
	}
	b.WriteString(what + "\n")
	for _, n := range notes {
		fmt.Fprintf(b, "  %s\n", plain(n))
	}
	b.WriteString("\n")
}

// counted is n and the noun, plural unless n is 1.
func counted(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// verb is the form of a verb that agrees with n.
func verb(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

type shadowGroup struct {
	Type   string         `json:"type"`
	Key    string         `json:"key"`
	Counts map[string]int `json:"counts"`
}

// exampleFields are a changed call's fields, but its arguments, as
// shadow --format json writes them and the pack reads them back.
type exampleFields struct {
	Type      string `json:"type"`
	Category  string `json:"category"`
	File      string `json:"file"`
	Session   string `json:"session"`
	Pos       int    `json:"pos"`
	Call      string `json:"call"`
	Tool      string `json:"tool"`
	Baseline  string `json:"baseline"`
	Candidate string `json:"candidate"`
	Reason    string `json:"reason"`
}

// shadowExample is a changed call as the pack reads it.
type shadowExample struct {
	exampleFields
	// Args are the call's arguments as recorded; Redacted names the
	// paths whose values the log does not hold.
	Args     map[string]any `json:"args"`
	Redacted []string       `json:"redacted,omitempty"`
}

// Shadow writes a comparison: the counts per category, the breakdown by
// tool, rule and check (the candidate's) of every group where something
// changed, and the changed calls the diff kept. unverified, when not
// empty, says which logs failed verify and were used anyway. The changed
// calls are streamed, never held: an error part way through leaves what
// was written, and the error says the output is incomplete.
func Shadow(w io.Writer, f Format, d *shadow.Diff, prov Provenance) error {
	if err := d.Err(); err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	if err := shadowTo(bw, f, d, prov); err != nil {
		return err
	}
	return bw.Flush()
}

func shadowTo(w *bufio.Writer, f Format, d *shadow.Diff, prov Provenance) error {
	cats := shadow.Categories()
	groups := shadowGroupsOf(d)
	if f == JSON {
		return shadowJSON(w, d, prov, groups)
	}
	write := writeTable
	var b strings.Builder
	if f == Markdown {
		write = writeMarkdown
		fmt.Fprintf(&b, "## Policy change: %d of %s decided otherwise\n\n", d.Changed(), counted(d.Calls, "call"))
	}
	writeUnverified(&b, f, prov.Unverified)
	if prov.CandidateIdentity != "" {
		fmt.Fprintf(&b, "The candidate acts under the group mapping of %s: each verified principal's scopes regranted from the groups its token presented.\n\n", prov.CandidateIdentity)
	}
	head := append([]string{"CALLS"}, upper(cats)...)
	row := []string{fmt.Sprint(d.Calls)}
	for _, c := range cats {
		row = append(row, fmt.Sprint(d.Counts[c]))
	}
	if err := write(&b, head, [][]string{row}); err != nil {
		return err
	}
	for _, g := range groups {
		var rows [][]string
		for _, k := range shadow.Keys(g.m) {
			m := g.m[k]
			if m[shadow.Unchanged] == sum(m) {
				continue // nothing to see
			}
			r := []string{k}
			for _, c := range cats {
				r = append(r, fmt.Sprint(m[c]))
			}
			rows = append(rows, r)
		}
		if len(rows) == 0 {
			continue
		}
		b.WriteString("\n")
		if f == Markdown {
			fmt.Fprintf(&b, "### By %s\n\n", g.name)
		}
		_ = write(&b, append([]string{strings.ToUpper(g.name)}, upper(cats)...), rows)
	}
	if _, err := w.WriteString(b.String()); err != nil {
		return err
	}
	return shadowChanges(w, f == Markdown, d)
}

// shadowChanges lists the changed calls: one pass over them measures the
// columns, a second draws the rows.
func shadowChanges(w *bufio.Writer, md bool, d *shadow.Diff) error {
	header := []string{"CATEGORY", "FILE", "SESSION", "CALL", "TOOL", "BASELINE", "CANDIDATE", "ARGUMENTS", "WHY"}
	t := newTable(md, header)
	cells := make([]string, len(header))
	n := 0
	err := d.EachChange(func(c *shadow.Change) error {
		n++
		t.measure(changeCells(cells, c))
		return nil
	})
	if err != nil || n == 0 {
		return err
	}
	w.WriteString("\n")
	if md {
		w.WriteString("### Examples\n\n")
	}
	t.header(w, header)
	return d.EachChange(func(c *shadow.Change) error {
		t.row(w, changeCells(cells, c))
		return nil
	})
}

// changeCells fills cells with a changed call's row.
func changeCells(cells []string, c *shadow.Change) []string {
	cells[0], cells[1], cells[2], cells[3], cells[4] = c.Category, c.File, c.Session, c.ID, c.Tool
	cells[5], cells[6] = outcomeText(c.Baseline), outcomeText(c.Candidate)
	cells[7], cells[8] = truncate(changeArgsText(c), maxArgsCell), c.Candidate.Reason
	return cells
}

// changeArgsText is a change's arguments as the calls listing shows them.
func changeArgsText(c *shadow.Change) string {
	if c.ArgsErr != "" {
		return "(arguments not shown: " + c.ArgsErr + ")"
	}
	s := string(c.Args)
	if len(c.Redacted) > 0 {
		s += " redacted: " + strings.Join(c.Redacted, ", ")
	}
	return s
}

func outcomeText(o shadow.Outcome) string {
	if o.Unevaluable {
		return "unevaluable"
	}
	s := string(o.Verdict) + " by " + string(o.Check)
	if o.Rule != "" {
		s += " (" + o.Rule + ")"
	}
	return s
}

// shadowGroupSet is one breakdown of a comparison: by tool, rule or check.
type shadowGroupSet struct {
	name string
	m    map[string]map[string]int
}

func shadowGroupsOf(d *shadow.Diff) []shadowGroupSet {
	return []shadowGroupSet{{"tool", d.ByTool}, {"rule", d.ByRule}, {"check", d.ByCheck}}
}

// exampleLine is a changed call as shadow --format json writes it: the
// arguments are the JSON the diff kept, written as they are.
type exampleLine struct {
	exampleFields
	Args     json.RawMessage `json:"args"`
	Redacted []string        `json:"redacted,omitempty"`
}

// categoryCounts is m with every category present, zero or not.
func categoryCounts(m map[string]int) map[string]int {
	out := map[string]int{}
	for _, c := range shadow.Categories() {
		out[c] = m[c]
	}
	return out
}

// shadowJSON writes the comparison as JSON lines: the summary, every
// group, then the changed calls.
func shadowJSON(w io.Writer, d *shadow.Diff, prov Provenance, groups []shadowGroupSet) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(shadowSummary{Type: "summary", Calls: d.Calls, Counts: categoryCounts(d.Counts), Candidate: prov.Candidate, CandidateIdentity: prov.CandidateIdentity, unverifiedFields: unverifiedOf(prov)}); err != nil {
		return err
	}
	for _, g := range groups {
		for _, k := range shadow.Keys(g.m) {
			if err := enc.Encode(shadowGroup{Type: "by_" + g.name, Key: k, Counts: categoryCounts(g.m[k])}); err != nil {
				return err
			}
		}
	}
	return d.EachChange(func(c *shadow.Change) error {
		if c.ArgsErr != "" {
			return fmt.Errorf("call %s of %s: its arguments cannot be written as JSON: %s", c.ID, c.File, c.ArgsErr)
		}
		return enc.Encode(exampleLine{exampleFields: exampleFields{Type: "example", Category: c.Category, File: c.File, Session: c.Session, Pos: c.Pos,
			Call: c.ID, Tool: c.Tool, Baseline: outcomeText(c.Baseline), Candidate: outcomeText(c.Candidate), Reason: c.Candidate.Reason},
			Args: c.Args, Redacted: c.Redacted})
	})
}

func upper(s []string) []string {
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = strings.ToUpper(x)
	}
	return out
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// argsText is the example's arguments as the calls listing shows them.
func (e shadowExample) argsText() string {
	return argsText(e.Args, e.Redacted)
}
