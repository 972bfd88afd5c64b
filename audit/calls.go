package audit

import (
	"io"
	"time"

	"bailiff/chain"
	"bailiff/engine"
)

// CallRow is one call of an audit log as it was recorded, where it is,
// and how it ended: the row the calls command lists, and the call a
// finding names.
type CallRow struct {
	Log     string
	Session string
	// Principal is the subject the session acted for, as its record
	// names it.
	Principal string
	Tenant    string // whose ceiling the session's calls spend
	Call      string
	Seq       int       // the call record's seq in its log
	At        time.Time // zero: the record carries no real time
	engine.ToolRef
	// Verdict is the call's final verdict, as the summary counts it:
	// allow or deny (an ask settled in band counts by its answer), ask
	// for a call held at an ask no one answered, Answered for one a
	// human answered out of band (a retry then went through as a call
	// of its own).
	Verdict string
	// Answer is an asked call's answer: approved, declined, or "" when
	// no one answered.
	Answer string
	// Decision is the decision committed on the call: the settling
	// answer's, for an ask settled in band.
	Decision engine.Decision
	// Args are the arguments as recorded: a redacted value is gone from
	// the log, and Redacted names its path.
	Args     map[string]any
	Redacted []string
}

// Calls reads a verified, evidential log's calls and gives them to fn,
// each session's once it has been read whole (an ask's answer may come
// at its end), in the session's order. Sessions come in the order they
// end, so a caller that wants the log's order sorts by Seq. The outcome
// of an ask is the summary's rule, taken from the same driver.
func Calls(name string, r io.Reader, ev chain.EvidenceStore, fn func(*CallRow) error) (LogRead, error) {
	var read LogRead
	rd := chain.NewReader(r)
	read.Err = readSessions(name, rd, ev, func(ls LogSession) error {
		rows, err := listSession(name, ls)
		for _, row := range rows {
			if ferr := fn(row); ferr != nil {
				return ferr
			}
		}
		return err
	})
	read.Records, read.Root = rd.Count(), rd.Root()
	return read, nil
}

// listSession drives one session of log name into its calls' rows: as
// far as it went, when the driver refuses a step.
func listSession(name string, ls LogSession) ([]*CallRow, error) {
	l := &callLister{log: name, open: map[string]*CallRow{}, oob: map[string]bool{}}
	d := &Driver{Config: Config{Policy: ls.Policy}, Observer: l}
	defer d.Close()
	var err error
	for i := range ls.Events {
		if err = d.Step(&ls.Events[i]); err != nil {
			break
		}
	}
	l.finish()
	return l.rows, err
}

// callLister observes one session's drive into rows.
type callLister struct {
	log, session, server string
	principal            string
	rows                 []*CallRow
	open                 map[string]*CallRow // asked, not settled
	oob                  map[string]bool     // answered out of band: approved?
}

func (l *callLister) Started(_ *Session, ev *Event) error {
	l.session = ev.Start.ID
	if ev.Start.Body != nil {
		l.server, l.principal = ev.Start.Body.Server, ev.Start.Body.Principal.Subject
	}
	return nil
}

func (l *callLister) Called(_ *Session, ev *Event, _, d engine.Decision) error {
	c := ev.Call.Call
	row := &CallRow{Log: l.log, Session: l.session, Principal: l.principal, Call: c.ID, Seq: ev.Pos, ToolRef: c.ToolRef,
		Verdict: string(d.Verdict), Decision: d, Args: c.Args}
	if realTime(ev.At) {
		row.At = ev.At
	}
	if row.Server == "" {
		row.Server = l.server
	}
	if b := ev.Call.Body; b != nil {
		row.Args, row.Redacted = b.Args, b.Redacted
	}
	l.rows = append(l.rows, row)
	if d.Verdict == engine.Ask {
		l.open[c.ID] = row
	}
	return nil
}

func (l *callLister) Granted(_ *Session, ev *Event, pc *Pending, g engine.Grant, settles bool, _, d engine.Decision) error {
	row, ok := l.open[ev.Grant.Call]
	switch {
	case !ok:
	case !settles && pc.Waiting():
		// As the summary counts it: answered out of band by the last
		// answer given, which approves nothing once expired.
		l.oob[ev.Grant.Call] = g.Approve && !ev.At.After(g.Expires)
	case settles:
		delete(l.open, ev.Grant.Call)
		// The answer's reason says who answered; the ask's, why it
		// was asked: a reader needs both.
		if asked := row.Decision.Reason; asked != "" && asked != d.Reason {
			d.Reason = asked + "; " + d.Reason
		}
		row.Decision, row.Verdict, row.Answer = d, string(d.Verdict), answerOf(d.Verdict == engine.Allow)
	}
	return nil
}

func (l *callLister) finish() {
	for call, approved := range l.oob {
		if row, ok := l.open[call]; ok {
			delete(l.open, call)
			row.Verdict, row.Answer = Answered, answerOf(approved)
		}
	}
}

func answerOf(approved bool) string {
	if approved {
		return "approved"
	}
	return "declined"
}

func (l *callLister) Resulted(*Session, *Event, engine.Source) error { return nil }
func (l *callLister) ToolsListed(*Session, *Event, bool) error       { return nil }
func (l *callLister) Ended(*Session, *Event) error                   { return nil }
