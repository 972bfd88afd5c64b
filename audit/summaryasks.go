package audit

import (
	"slices"
	"sort"
	"time"

	"bailiff/engine"
)

// Answered is the final verdict a summary counts a call held at an ask
// by when a human answered it out of band: not forwarded, yet answered.
const Answered = "answered"

// asked is a call waiting for its answer.
type asked struct {
	tool, day string
	at        time.Time // zero: no real time
}

// events counts one session's calls and answers in range, as audit's
// driver applies them under the session's policy p: which answer settles
// which ask is the driver's rule, not the summary's. An asked call's
// verdict is its final one, as replay and shadow show it: the answer that
// settles it moves it from ask. Its check stays the one that asked;
// approval counts the answer. A session the driver refuses is counted as
// far as it went, and the error says why.
func (s *Summary) events(p *engine.Policy, server string, events []Event) error {
	c := &askCounter{s: s, server: server, open: map[string]asked{}, oob: map[string]bool{}, inRange: map[string]bool{}}
	l := &callLister{log: s.curLog, open: map[string]*CallRow{}, oob: map[string]bool{}}
	d := &Driver{Config: Config{Policy: p, Ledger: s.summaryLedger()}, Observer: both{c, l}}
	defer d.Close()
	var err error
	for i := range events {
		c.in = s.place(events[i].At)
		if err = d.Step(&events[i]); err != nil {
			break
		}
	}
	c.finish()
	l.finish()
	for _, r := range l.rows {
		if c.inRange[r.Call] {
			r.Tenant = s.tenant
			s.flag(r)
			s.limitRow(r)
		}
	}
	return err
}

// flag keeps a call a reviewer must look at: denied, or asked and never
// answered. The first maxFlagged by log and seq are kept whole; the rest
// are counted.
func (s *Summary) flag(r *CallRow) {
	if r.Verdict != string(engine.Deny) && r.Verdict != string(engine.Ask) {
		return
	}
	s.FlaggedCalls++
	i := sort.Search(len(s.Flagged), func(i int) bool { return rowBefore(r, s.Flagged[i], s.logOrder) })
	if i >= maxFlagged {
		return
	}
	s.Flagged = slices.Insert(s.Flagged, i, r)
	if len(s.Flagged) > maxFlagged {
		s.Flagged = s.Flagged[:maxFlagged]
	}
}

// maxFlagged bounds the flagged calls a summary keeps whole.
const maxFlagged = 100

// rowBefore orders calls by log (in the order the logs were added), then
// seq.
func rowBefore(a, b *CallRow, order map[string]int) bool {
	if a.Log != b.Log {
		return order[a.Log] < order[b.Log]
	}
	return a.Seq < b.Seq
}

// place counts an event's time into the period and tells whether the
// event is in range.
func (s *Summary) place(at time.Time) bool {
	switch {
	case !realTime(at):
		// No time to place it in a period: counted, never dated.
		s.Untimed++
		return s.Since.IsZero() && s.Until.IsZero()
	case !s.inRange(at):
		return false
	}
	if s.First.IsZero() || at.Before(s.First) {
		s.First = at
	}
	if at.After(s.Last) {
		s.Last = at
	}
	return true
}

// askCounter observes one session's drive for the summary.
type askCounter struct {
	s       *Summary
	server  string
	in      bool             // the step being taken is in range
	open    map[string]asked // asked calls in range, not settled
	oob     map[string]bool  // asked calls answered out of band: approved?
	inRange map[string]bool  // the calls in range, by id
}

func (c *askCounter) Called(_ *Session, ev *Event, _, d engine.Decision) error {
	if !c.in {
		return nil
	}
	call := ev.Call.Call
	c.inRange[call.ID] = true
	day, at := "(no time)", time.Time{}
	if realTime(ev.At) {
		day, at = ev.At.UTC().Format("2006-01-02"), ev.At
		c.s.Over.add(at, string(d.Verdict), 1)
	}
	c.s.call(c.server, day, call, d)
	if d.Verdict == engine.Ask {
		c.open[call.ID] = asked{call.Tool, day, at}
	}
	return nil
}

func (c *askCounter) Granted(_ *Session, ev *Event, pc *Pending, g engine.Grant, settles bool, _, d engine.Decision) error {
	a, ok := c.open[ev.Grant.Call]
	switch {
	case !c.in || !ok:
	case !settles && pc.Waiting():
		// An answer given out of band (bailiff approve) settles no
		// call: the asked call stays held, and a retry uses the grant.
		// The ask was answered all the same, by the last answer given;
		// one that had expired when it was recorded approves nothing,
		// as the gateway counts it in band.
		c.oob[ev.Grant.Call] = g.Approve && !ev.At.After(g.Expires)
	case settles:
		delete(c.open, ev.Grant.Call)
		c.s.move(a, string(d.Verdict))
		c.s.Settled++
		if d.Verdict == engine.Allow {
			c.s.Asks["approved"]++
		} else {
			c.s.Asks["declined"]++
		}
	}
	return nil
}

// finish counts the asks answered out of band and those never answered:
// a call answered out of band moves from ask to Answered wherever it was
// counted, so no chart draws it as never answered.
func (c *askCounter) finish() {
	for call, approved := range c.oob {
		a, ok := c.open[call]
		if !ok {
			continue // settled in band after all
		}
		delete(c.open, call)
		c.s.move(a, Answered)
		if approved {
			c.s.Asks["approved"]++
		} else {
			c.s.Asks["declined"]++
		}
	}
	c.s.Asks["unanswered"] += len(c.open)
}

// move counts an asked call by its final verdict v instead of ask.
func (s *Summary) move(a asked, v string) {
	s.ByTool[a.tool][string(engine.Ask)]--
	s.ByTool[a.tool][v]++
	s.ByDay[a.day][string(engine.Ask)]--
	s.ByDay[a.day][v]++
	if !a.at.IsZero() {
		s.Over.add(a.at, string(engine.Ask), -1)
		s.Over.add(a.at, v, 1)
	}
}

func (c *askCounter) Started(*Session, *Event) error                 { return nil }
func (c *askCounter) Resulted(*Session, *Event, engine.Source) error { return nil }
func (c *askCounter) ToolsListed(*Session, *Event, bool) error       { return nil }
func (c *askCounter) Ended(*Session, *Event) error                   { return nil }

// both tells two observers each step, in order.
type both [2]Observer

func (b both) Started(s *Session, ev *Event) error {
	if err := b[0].Started(s, ev); err != nil {
		return err
	}
	return b[1].Started(s, ev)
}

func (b both) Called(s *Session, ev *Event, decided, committed engine.Decision) error {
	if err := b[0].Called(s, ev, decided, committed); err != nil {
		return err
	}
	return b[1].Called(s, ev, decided, committed)
}

func (b both) Granted(s *Session, ev *Event, pc *Pending, g engine.Grant, settles bool, decided, committed engine.Decision) error {
	if err := b[0].Granted(s, ev, pc, g, settles, decided, committed); err != nil {
		return err
	}
	return b[1].Granted(s, ev, pc, g, settles, decided, committed)
}

func (b both) Resulted(s *Session, ev *Event, src engine.Source) error {
	if err := b[0].Resulted(s, ev, src); err != nil {
		return err
	}
	return b[1].Resulted(s, ev, src)
}

func (b both) ToolsListed(s *Session, ev *Event, refused bool) error {
	if err := b[0].ToolsListed(s, ev, refused); err != nil {
		return err
	}
	return b[1].ToolsListed(s, ev, refused)
}

func (b both) Ended(s *Session, ev *Event) error {
	if err := b[0].Ended(s, ev); err != nil {
		return err
	}
	return b[1].Ended(s, ev)
}
