package proxy

import (
	"errors"

	"bailiff/audit"
	"bailiff/engine"
)

// errAnswered is an in-band answer for a call no longer waiting for one:
// it is refused, and no record of it is written.
var errAnswered = errors.New("the call was already answered")

// sessionObserver observes the session as the gateway drives it through audit's
// driver, one request at a time under p.mu: the decision the last step
// made, for the request that took it.
type sessionObserver struct {
	decided engine.Decision
}

func (w *sessionObserver) Started(*audit.Session, *audit.Event) error { return nil }

func (w *sessionObserver) Called(_ *audit.Session, _ *audit.Event, d, _ engine.Decision) error {
	w.decided = d
	return nil
}

func (w *sessionObserver) Granted(_ *audit.Session, ev *audit.Event, _ *audit.Pending, _ engine.Grant, settles bool, d, _ engine.Decision) error {
	if ev.Grant.Settled && !settles {
		return errAnswered
	}
	w.decided = d
	return nil
}

func (w *sessionObserver) Resulted(*audit.Session, *audit.Event, engine.Source) error { return nil }
func (w *sessionObserver) ToolsListed(*audit.Session, *audit.Event, bool) error       { return nil }
func (w *sessionObserver) Ended(*audit.Session, *audit.Event) error                   { return nil }

// step takes one step of the session, at the gateway's clock unless the
// event says when. Called with p.mu held.
func (p *Proxy) step(ev audit.Event) error {
	if ev.At.IsZero() {
		ev.At = p.opt.Now()
	}
	return p.drv.Step(&ev)
}
