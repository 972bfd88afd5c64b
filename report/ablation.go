package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"bailiff/shadow"
)

type ablationLine struct {
	Type        string `json:"type"`
	Check       string `json:"check"`
	Calls       int    `json:"calls"`
	Changed     int    `json:"changed"`
	Unevaluable int    `json:"unevaluable"`
	StopsAlone  int    `json:"attacks_stopped_alone"`
	Stopped     int    `json:"attacks_still_stopped"`
	Costs       int    `json:"benign_cost"`
	Decided     int    `json:"decided"`
	Dead        bool   `json:"dead"`
	// NothingAlone: it decided calls, and switching it off alone
	// changes none.
	NothingAlone bool `json:"earned_nothing_alone"`
	// Unmeasured: it decided no call and changed none, but calls its
	// absence might change could not be decided again.
	Unmeasured bool `json:"unmeasured"`
}

type ablationTotals struct {
	Type           string  `json:"type"`
	Calls          int     `json:"calls"`
	Attacks        int     `json:"attacks"`
	AttacksStopped int     `json:"attacks_stopped"`
	BlockRate      float64 `json:"block_rate"`
	Benign         int     `json:"benign"`
	BenignStopped  int     `json:"benign_stopped"`
	BenignLoss     float64 `json:"benign_loss"`
	AttacksDenied  int     `json:"attacks_denied"`
	BenignDenied   int     `json:"benign_denied"`
	unverifiedFields
}

// Ablation writes what each check earns: per check, the calls whose
// verdict changes without it, the attacks it alone stops, the attacks
// still stopped without it, the benign calls it costs, and whether it is
// dead; then the whole policy's block rate and benign loss. unverified,
// when not empty, says which logs failed verify and were used anyway.
func Ablation(w io.Writer, f Format, scores []shadow.Score, t shadow.Totals, prov Provenance) error {
	if f == JSON {
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(ablationTotals{Type: "policy", Calls: t.Calls, Attacks: t.Attacks, AttacksStopped: t.AttacksStopped,
			BlockRate: t.BlockRate(), Benign: t.Benign, BenignStopped: t.BenignStopped, BenignLoss: t.BenignLoss(),
			AttacksDenied: t.AttacksDenied, BenignDenied: t.BenignDenied, unverifiedFields: unverifiedOf(prov)}); err != nil {
			return err
		}
		for _, p := range t.Through {
			if err := enc.Encode(throughLine{Type: "through", File: p.File, Session: p.Session, Pos: p.Pos, Call: p.ID, Tool: p.Tool,
				Verdict: baselineText(p)}); err != nil {
				return err
			}
		}
		for _, s := range scores {
			if err := enc.Encode(ablationLine{Type: "check", Check: s.Name, Calls: s.Calls, Changed: s.Changed, Unevaluable: s.Uneval,
				StopsAlone: s.StopsAlone, Stopped: s.Stopped, Costs: s.Costs, Decided: s.Decided, Dead: s.Dead(), NothingAlone: s.NothingAlone(), Unmeasured: s.Unmeasured()}); err != nil {
				return err
			}
		}
		return nil
	}
	write := writeTable
	var b strings.Builder
	if f == Markdown {
		write = writeMarkdown
		b.WriteString("## Ablation: what each check earns\n\n")
	}
	writeUnverified(&b, f, prov.Unverified)
	var rows [][]string
	for _, s := range scores {
		rows = append(rows, []string{s.Name, fmt.Sprint(s.Decided), fmt.Sprint(s.Changed), fmt.Sprint(s.Uneval), fmt.Sprint(s.StopsAlone),
			fmt.Sprint(s.Stopped), fmt.Sprint(s.Costs), scoreState(s)})
	}
	if err := write(&b, []string{"CHECK OFF", "DECIDED", "CHANGED", "UNEVALUABLE", "ATTACKS STOPPED ALONE", "ATTACKS STILL STOPPED", "BENIGN COST", "STATE"}, rows); err != nil {
		return err
	}
	b.WriteString("\n")
	_ = write(&b, []string{"CALLS", "ATTACKS", "STOPPED", "BLOCK RATE", "BENIGN", "STOPPED", "BENIGN LOSS"}, [][]string{{
		fmt.Sprint(t.Calls), fmt.Sprint(t.Attacks), fmt.Sprint(t.AttacksStopped), rate(t.BlockRate(), t.Attacks),
		fmt.Sprint(t.Benign), fmt.Sprint(t.BenignStopped), rate(t.BenignLoss(), t.Benign)}})
	if t.Attacks+t.Benign > 0 {
		// The confusion table: a stop is an ask or a deny, and only a
		// deny is a loss no human can answer away.
		b.WriteString("\n")
		_ = write(&b, []string{"LABEL", "CALLS", "ALLOWED", "ASKED", "DENIED"}, [][]string{
			{"attack", fmt.Sprint(t.Attacks), fmt.Sprint(t.Attacks - t.AttacksStopped), fmt.Sprint(t.AttacksStopped - t.AttacksDenied), fmt.Sprint(t.AttacksDenied)},
			{"benign", fmt.Sprint(t.Benign), fmt.Sprint(t.Benign - t.BenignStopped), fmt.Sprint(t.BenignStopped - t.BenignDenied), fmt.Sprint(t.BenignDenied)}})
	}
	if len(t.Through) > 0 {
		b.WriteString("\n")
		if f == Markdown {
			b.WriteString("### Attacks not stopped\n\n")
		}
		var rows [][]string
		for _, p := range t.Through {
			rows = append(rows, []string{p.File, p.Session, p.ID, fmt.Sprint(p.Pos), p.Tool, baselineText(p)})
		}
		_ = write(&b, []string{"ATTACK NOT STOPPED IN", "SESSION", "CALL", "POS", "TOOL", "VERDICT"}, rows)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// throughLine is the JSON form of an attack call the policy let through.
type throughLine struct {
	Type    string `json:"type"`
	File    string `json:"file"`
	Session string `json:"session"`
	Pos     int    `json:"pos"`
	Call    string `json:"call"`
	Tool    string `json:"tool"`
	Verdict string `json:"verdict"`
}

// rate shows a share, or "-" over nothing: a block rate of 1.00 over no
// attacks would read as a measurement.
func rate(r float64, over int) string {
	if over == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", r)
}

// scoreState is a score's state as the table shows it: ablationState,
// or unmeasured when calls its absence might change could not be decided.
func scoreState(s shadow.Score) string {
	if s.Unmeasured() {
		return "unmeasured"
	}
	return ablationState(s.Dead(), s.NothingAlone())
}

// ablationState names what a check did over the history, when that was
// nothing: dead (it decided no call and its absence changes none), or
// earned nothing alone (it decided calls, and its absence changes none).
func ablationState(dead, nothingAlone bool) string {
	switch {
	case dead:
		return "dead"
	case nothingAlone:
		return "earned nothing alone"
	}
	return "-"
}

// baselineText is a pair's baseline verdict as a row shows it.
func baselineText(p shadow.Pair) string {
	d := p.Baseline
	return outcomeText(shadow.Outcome{Verdict: d.Verdict, Check: d.Check, Rule: d.Rule, Unevaluable: d.Unevaluable})
}
