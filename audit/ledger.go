package audit

import (
	"sync"
	"time"

	"bailiff/engine"
)

// Ledger is the engine's ledger of tenant spending and rate slots as the
// sessions sharing it use it. A step that reads or feeds it (a call, an
// answer, a result) runs alone on it, and live it runs at a time after
// every earlier such step's: the log then holds them in the order they
// were decided, at distinct times, and a reader merging logs by time
// rebuilds exactly the ledger each decision saw.
type Ledger struct {
	mu   sync.Mutex
	l    *engine.Ledger
	last time.Time
}

// NewLedger is an empty shared ledger.
func NewLedger() *Ledger { return &Ledger{l: engine.NewLedger()} }

// Spending is what each tenant spent per period, so far.
func (l *Ledger) Spending() []engine.Spending {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.l.Spending()
}

// hold takes the ledger for one step at now, and returns the time the
// step runs at: now, or just after the last step when the clock did not
// move on (or went back).
func (l *Ledger) hold(now time.Time, live bool) time.Time {
	l.mu.Lock()
	if live && !now.After(l.last) {
		now = l.last.Add(time.Nanosecond)
	}
	if now.After(l.last) {
		l.last = now
	}
	return now
}

func (l *Ledger) release() { l.mu.Unlock() }

// counts tells whether ev is a step the ledger orders: one that decides a
// call, answers one, or returns what one spent.
func (ev *Event) counts() bool { return ev.Call != nil || ev.Grant != nil || ev.Result != nil }
