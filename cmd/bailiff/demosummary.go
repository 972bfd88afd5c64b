package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"bailiff/internal/demo"
)

// demoSummary is what `demo --format json` prints: what a script checks
// to know the story held.
type demoSummary struct {
	OK       bool         `json:"ok"`
	Dir      string       `json:"dir"`
	Calls    []demoCall   `json:"calls"`
	Disk     []demo.Check `json:"disk"`
	Verify   demoVerify   `json:"verify"`
	Tampered demoVerify   `json:"tampered"`
	Shadow   demoShadow   `json:"shadow"`
	Ablate   demoAblate   `json:"ablate"`
	Report   demoReport   `json:"report"`
}

type demoCall struct {
	Step   int    `json:"step"`
	Says   string `json:"agent"`
	Attack bool   `json:"attack"`
	demo.Decision
	// Refused is what the agent saw: an error result.
	Refused bool `json:"refused"`
	wantAsk bool // the script expects an ask a human approves
}

type demoVerify struct {
	Command  string `json:"command"`
	Exit     int    `json:"exit"`
	Edit     string `json:"edit,omitempty"`
	Records  int    `json:"records,omitempty"`
	Calls    int    `json:"calls,omitempty"`
	Findings int    `json:"findings"`
	// Unevaluable counts the verdicts verify could not recompute; the
	// demo's log must have none, or "every verdict recomputed" is false.
	Unevaluable int    `json:"unevaluable"`
	First       string `json:"first_finding,omitempty"`
}

type demoShadow struct {
	Command   string         `json:"command"`
	Candidate string         `json:"candidate"`
	Changes   map[string]int `json:"changes"`
}

type demoAblate struct {
	Command       string          `json:"command"`
	Attacks       int             `json:"attacks"`
	Stopped       int             `json:"attacks_stopped"`
	BenignStopped int             `json:"benign_stopped"`
	Checks        []demoAblateRow `json:"checks"`
	Dead          []string        `json:"dead"`
	// Idle are the checks that decided calls and earned nothing alone.
	Idle []string `json:"earned_nothing_alone"`
}

type demoAblateRow struct {
	Check   string `json:"check"`
	Changed int    `json:"changed"`
	Stops   int    `json:"attacks_only_it_stops"`
}

type demoReport struct {
	Command string `json:"command"`
	Exit    int    `json:"exit"`
	Status  string `json:"status"` // the pack's own status line: clean, findings or tampered
}

// ok is whether the story held: every attack refused and every benign
// call let through, the disk as it should be, the log verified and its
// tampered copy caught.
func (s *demoSummary) ok() bool {
	for _, c := range s.Calls {
		if c.Attack != (c.Verdict != "allow") || c.Attack != c.Refused || c.Asked != c.wantAsk {
			return false
		}
	}
	for _, c := range s.Disk {
		if !c.OK {
			return false
		}
	}
	return s.verified() && s.caught() && s.shadowed() && s.ablated() && s.reported()
}

func (s *demoSummary) verified() bool {
	return s.Verify.Exit == 0 && s.Verify.Findings == 0 && s.Verify.Unevaluable == 0 && s.Verify.Calls == len(s.Calls)
}

func (s *demoSummary) caught() bool { return s.Tampered.Exit == 1 && s.Tampered.Findings > 0 }

func (s *demoSummary) shadowed() bool { return s.Shadow.Changes["newly-denied"] > 0 }

func (s *demoSummary) ablated() bool {
	return s.Ablate.Attacks > 0 && s.Ablate.Stopped == s.Ablate.Attacks && s.Ablate.BenignStopped == 0
}

func (s *demoSummary) reported() bool { return s.Report.Exit == 0 && s.Report.Status == "clean" }

func mark(ok bool) string {
	if ok {
		return "ok"
	}
	return "FAIL"
}

// transcript is the story for a person.
func (s *demoSummary) transcript() string {
	var b strings.Builder
	fmt.Fprintf(&b, "bailiff demo: an office assistant meets a poisoned email, behind the real gateway\n\n")
	fmt.Fprintf(&b, "The user asked for a summary of the Q3 report, mailed to bob@corp.example and\ncarol@partner.example. An email in the inbox tells the agent to do worse.\n\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STEP\tTHE AGENT\t\tVERDICT\tCHECK\tRULE")
	for _, c := range s.Calls {
		who := ""
		if c.Attack {
			who = "injected"
		}
		verdict := c.Verdict
		switch {
		case c.Asked && c.Verdict == "allow":
			verdict += " (asked, approved)"
		case c.Asked:
			verdict += " (asked, declined)"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", c.Step, c.Says, who, verdict, c.Check, orDash(c.Rule))
	}
	tw.Flush()
	fmt.Fprintf(&b, "\nWhy the injected calls were refused, and why one was asked:\n")
	for _, c := range s.Calls {
		switch {
		case c.Attack:
			fmt.Fprintf(&b, "  %d  %s\n", c.Step, c.Reason)
		case c.Asked:
			fmt.Fprintf(&b, "  %d  %s; %s\n", c.Step, c.AskReason, c.Reason)
		}
	}
	fmt.Fprintf(&b, "\nOn disk, read back from the files themselves:\n")
	for _, c := range s.Disk {
		fmt.Fprintf(&b, "  %-4s %s (%s)\n", mark(c.OK), c.Name, c.Detail)
	}
	fmt.Fprintf(&b, "\nThe offline toolkit, on the log the gateway wrote:\n")
	fmt.Fprintf(&b, "  %-4s $ %s\n       %d records, %d calls: %d findings, %d verdicts that could not be recomputed\n", mark(s.verified()),
		s.Verify.Command, s.Verify.Records, s.Verify.Calls, s.Verify.Findings, s.Verify.Unevaluable)
	fmt.Fprintf(&b, "  %-4s $ %s\n       (%s) caught: exit %d, %s\n", mark(s.caught()),
		s.Tampered.Command, s.Tampered.Edit, s.Tampered.Exit, orDash(s.Tampered.First))
	fmt.Fprintf(&b, "  %-4s $ %s\n       %s: %s\n", mark(s.shadowed()), s.Shadow.Command, s.Shadow.Candidate, changes(s.Shadow.Changes))
	fmt.Fprintf(&b, "  %-4s $ %s\n       %s\n", mark(s.ablated()), s.Ablate.Command, stops(s.Ablate))
	fmt.Fprintf(&b, "  %-4s $ %s\n       the pack's status: %s\n", mark(s.reported()), s.Report.Command, orDash(s.Report.Status))
	fmt.Fprintf(&b, "\nEverything is in %s:\n", s.Dir)
	for _, f := range demoFiles {
		fmt.Fprintf(&b, "  %-26s %s\n", f[0], f[1])
	}
	// The commands above ran in that directory, with bailiff installed:
	// a newcomer who ran the demo with go run has neither.
	fmt.Fprintf(&b, "\nTo look for yourself (in this repository, bailiff is `go run ./cmd/bailiff` until you `go install ./cmd/bailiff`):\n")
	for _, c := range demoNext {
		fmt.Fprintf(&b, "  $ %s\n       %s\n", fmt.Sprintf(c[0], s.Dir), c[1])
	}
	fmt.Fprintf(&b, "  the review pack: %s/pack.md, or pack.html in a browser\n", s.Dir)
	if s.OK {
		fmt.Fprintf(&b, "\nEvery check held.\n")
	} else {
		fmt.Fprintf(&b, "\nA check FAILED (marked above).\n")
	}
	return b.String()
}

// demoNext are commands to look further, each with the demo's directory.
var demoNext = [][2]string{
	{"bailiff calls %s/audit.jsonl", "every call, with its verdict and why"},
	{"bailiff verify %s/tampered.jsonl", "the edit, caught at its record (exit 1)"},
}

// demoFiles are what the demo leaves in its directory.
var demoFiles = [][2]string{
	{"audit.jsonl", "the gateway's hash-chained audit log (evidence in audit.jsonl.evidence/)"},
	{"pack.md, pack.html", "the review pack"},
	{"policy.yaml", "the policy the gateway enforced"},
	{"stricter.yaml", "the candidate policy shadow scored"},
	{"shadow.json, ablate.json", "shadow's and ablate's results"},
	{"labels.jsonl", "which calls were attacks, for ablate"},
	{"tampered.jsonl", "the edited copy verify caught"},
	{"office/", "the demo server's workspace, inbox and outbox"},
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func changes(m map[string]int) string {
	var parts []string
	for _, k := range []string{"newly-denied", "newly-asked", "newly-allowed", "unevaluable", "unchanged"} {
		if n, ok := m[k]; ok {
			parts = append(parts, fmt.Sprintf("%d %s", n, k))
		}
	}
	return strings.Join(parts, ", ")
}

func stops(a demoAblate) string {
	s := fmt.Sprintf("the policy stops %d of %d attacks and %d benign calls", a.Stopped, a.Attacks, a.BenignStopped)
	var parts []string
	for _, r := range a.Checks {
		parts = append(parts, fmt.Sprintf("%s %d", r.Check, r.Stops))
	}
	if len(parts) > 0 {
		s += "; attacks only one check stops: " + strings.Join(parts, ", ")
	}
	if alone := a.alone(); alone < a.Stopped {
		s += fmt.Sprintf("; %s stopped by the rules (which --rules switches off one at a time) or by more than one check", countOf(a.Stopped-alone, "more attack"))
	}
	if len(a.Dead) > 0 {
		s += "; dead here (deciding nothing, changing nothing): " + strings.Join(a.Dead, ", ")
	}
	if len(a.Idle) > 0 {
		s += "; deciding calls, yet earning nothing alone: " + strings.Join(a.Idle, ", ")
	}
	return s
}

// alone is how many attacks a single check alone stops, summed.
func (a demoAblate) alone() int {
	n := 0
	for _, r := range a.Checks {
		n += r.Stops
	}
	return n
}

// demoProgress shows which stage the demo is in, on stderr when it is a
// terminal; elsewhere it prints nothing.
type demoProgress struct{ bar *progressbar.ProgressBar }

func newDemoProgress(stderr io.Writer, stages int) *demoProgress {
	f, ok := stderr.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return &demoProgress{}
	}
	return &demoProgress{bar: progressbar.NewOptions(stages, progressbar.OptionSetWriter(f),
		progressbar.OptionSetRenderBlankState(true), progressbar.OptionClearOnFinish(), progressbar.OptionShowCount())}
}

// Next starts a stage.
func (p *demoProgress) Next(what string) {
	if p.bar != nil {
		p.bar.Describe(what)
		_ = p.bar.Add(1)
	}
}

// Done clears the display; it may be called more than once.
func (p *demoProgress) Done() {
	if p.bar != nil {
		_ = p.bar.Finish()
		_ = p.bar.Clear()
		p.bar = nil
	}
}
