package audit

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"bailiff/chain"
	"bailiff/engine"
)

// Ledger is the engine's ledger of tenant spending and rate slots as the
// sessions sharing it use it. A step that reads or feeds it (a call, an
// answer, a result) runs alone on it, and live it runs at a time after
// every earlier such step's: the log then holds them in the order they
// were decided, at distinct times, and a reader merging logs by time
// rebuilds exactly the ledger each decision saw.
//
// With a CounterStore, the steps of every process sharing the store are
// taken one at a time too: each step first reads what the others
// changed, and saves what it changed, with the time it ran at, before
// the next may start. A restarted gateway starts from the store.
type Ledger struct {
	mu   sync.Mutex
	l    *engine.Ledger
	last time.Time

	store   CounterStore
	version int64  // the store's last change this ledger holds
	unlock  func() // the store's lock, while a live step holds it
	err     error  // the store holds rows this process cannot read: no step is taken
}

// ErrLedger wraps a failure of the shared counters: the step is refused,
// since a decision on counts another gateway changed would be a guess.
var ErrLedger = errors.New("the tenant counters cannot be read or kept")

// ErrUnsaved is a step that was taken and recorded but whose change to
// the shared counters could not be saved: the other processes do not see
// it, so what it decided must not be acted on (its call is not
// forwarded, and is closed as failed). The change is saved with the next
// step that reaches the store. It is also ErrLedger.
var ErrUnsaved = fmt.Errorf("%w: the step's change could not be saved", ErrLedger)

// Counter is one row of a CounterStore (state.Counter).
type Counter struct {
	Tenant, Counter, WindowStart string
	WindowSecs, Used             int64
	// Add says Used is to be added to the row's (which never goes
	// below zero), not written over it.
	Add bool
}

// CounterStore keeps a ledger's counts where every process sharing them
// sees them: the state database.
type CounterStore interface {
	LockCounters() (unlock func(), err error)
	CountersSince(version int64) (rows []Counter, now int64, last time.Time, err error)
	SaveCounters(prune, rows []Counter, last time.Time) (version int64, err error)
}

// NewLedger is an empty shared ledger, kept in this process.
func NewLedger() *Ledger { return &Ledger{l: engine.NewLedger()} }

// NewStoredLedger is a ledger kept in store, shared with every process
// that uses it.
func NewStoredLedger(store CounterStore) *Ledger {
	l := &Ledger{l: engine.NewLedger(), store: store}
	l.l.Track()
	return l
}

// hold takes the ledger for one step at now, and returns the time the
// step runs at: live, now, or just after the last step when the clock
// did not move on (or went back, or another gateway's ran later).
// decides says the step decides a call: one that only gives back what a
// call spent (a result) is still taken when the store fails, so its
// record is not lost; what it gives back is saved by the next step that
// reaches the store.
func (l *Ledger) hold(now time.Time, live, decides bool) (at time.Time, err error) {
	l.mu.Lock()
	defer func() {
		// A panic while the counters were read must not leave them
		// locked for every later step, in this process or another.
		if r := recover(); r != nil {
			l.err = fmt.Errorf("%w: %v", ErrLedger, r)
			if l.unlock != nil {
				l.unlock()
				l.unlock = nil
			}
			l.mu.Unlock()
			at, err = now, l.err
		}
	}()
	if live && l.store != nil {
		if err := l.load(now); err != nil && decides {
			l.mu.Unlock()
			return now, err
		}
	}
	if live && !now.After(l.last) {
		now = l.last.Add(time.Nanosecond)
	}
	if now.After(l.last) {
		l.last = now
	}
	return now, nil
}

// maxAhead is how far the shared counters' last step may be ahead of
// this process's clock: gateways' clocks differ a little, and a step is
// then stamped just after the last; a clock far ahead would stamp every
// gateway's steps in its future, where no window ever resets.
const maxAhead = 10 * time.Second

func (l *Ledger) load(now time.Time) error {
	if l.err != nil {
		return l.err
	}
	unlock, err := l.store.LockCounters()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrLedger, err)
	}
	l.unlock = unlock
	fail := func(err error, sticky bool) error {
		l.unlock()
		l.unlock = nil
		err = fmt.Errorf("%w: %v", ErrLedger, err)
		if sticky {
			l.err = err
		}
		return err
	}
	rows, version, last, err := l.store.CountersSince(l.version)
	if err != nil {
		return fail(err, false)
	}
	if last.After(now.Add(maxAhead)) {
		return fail(fmt.Errorf("the last step on the shared counters was taken at %s, %s ahead of this machine's clock: a gateway sharing them has its clock ahead, or this one's is behind; calls that count are refused until the clocks agree (see docs/proxy.md, \"Tenant counters\")",
			last.UTC().Format(chain.TimeFormat), last.Sub(now).Round(time.Second)), false)
	}
	ps, rs, err := decodeCounters(rows)
	if err != nil {
		// Rows this process cannot read stay unread: every later step
		// would decide without them.
		return fail(err, true)
	}
	l.l.Restore(ps, rs)
	l.version = version
	if last.After(l.last) {
		l.last = last
	}
	return nil
}

// release ends the step: what it changed is saved, with its time, and
// the next step may start. A change that cannot be saved is ErrUnsaved:
// the step's decision must not be acted on, and the change is saved by
// the next step that reaches the store (a period's spending is saved as
// what was added to it, so a change saved late is not lost in another
// process's).
func (l *Ledger) release() error {
	var err error
	if l.unlock != nil {
		prune, rows := encodeCounters(l.l.Changes())
		version, serr := l.store.SaveCounters(prune, rows, l.last)
		if serr != nil {
			err = fmt.Errorf("%w: %v", ErrUnsaved, serr)
		} else {
			l.version = version
			l.l.Saved()
		}
		l.unlock()
		l.unlock = nil
	}
	l.mu.Unlock()
	return err
}

// Bounds on what a counter row may hold: a rate's N, and a period's
// spending, which never passes the largest ceiling by more than the
// largest cost.
const (
	maxRateSlots = 100_000
	maxSpent     = 2_000_000_000_000_000
)

// counts tells whether ev is a step the ledger orders: one that decides a
// call, answers one, or gives back what one spent (a result that is not
// ok, of a call the session made: a result that is ok changes nothing,
// and reads nothing).
func (ev *Event) counts(s *Session) bool {
	if ev.Result != nil {
		return ev.Result.Body.Status != StatusOK && s.Made(ev.Result.Body.Call)
	}
	return ev.Call != nil || ev.Grant != nil
}

// A period's spending is the row (tenant, "cost WINDOW", its start); a
// rate's slots are rows (who, "rate BY N SECONDS SCOPE", each slot's
// time), of which those before the oldest the ledger keeps are pruned.
func encodeCounters(ps []engine.Spending, rs []engine.RateSlots) (prune, rows []Counter) {
	for _, p := range ps {
		if p.Added != 0 {
			rows = append(rows, Counter{Tenant: p.Tenant, Counter: "cost " + p.Window, WindowStart: p.Start.UTC().Format(time.RFC3339), Used: p.Added, Add: true})
		}
	}
	for _, r := range rs {
		secs := int64(r.Per / time.Second)
		name := fmt.Sprintf("rate %s %d %d %s", r.By, r.N, secs, r.Scope)
		if !r.Keep.IsZero() {
			prune = append(prune, Counter{Tenant: r.Who, Counter: name, WindowStart: r.Keep.UTC().Format(chain.TimeFormat)})
		}
		for _, t := range r.Times {
			rows = append(rows, Counter{Tenant: r.Who, Counter: name, WindowStart: t.UTC().Format(chain.TimeFormat), WindowSecs: secs, Used: 1})
		}
	}
	return prune, rows
}

func decodeCounters(rows []Counter) ([]engine.Spending, []engine.RateSlots, error) {
	var ps []engine.Spending
	var rs []engine.RateSlots
	at := map[string]int{} // a rate's slots, by its row names
	for _, c := range rows {
		if window, ok := strings.CutPrefix(c.Counter, "cost "); ok {
			start, err := time.Parse(time.RFC3339, c.WindowStart)
			if err != nil {
				return nil, nil, fmt.Errorf("counter %q of %q: bad start %q", c.Counter, c.Tenant, c.WindowStart)
			}
			if c.Used < 0 || c.Used > maxSpent {
				return nil, nil, fmt.Errorf("counter %q of %q holds %d, more than any ceiling", c.Counter, c.Tenant, c.Used)
			}
			ps = append(ps, engine.Spending{Tenant: c.Tenant, Window: window, Start: start, Spent: c.Used})
			continue
		}
		f := strings.SplitN(c.Counter, " ", 5)
		if len(f) != 5 || f[0] != "rate" {
			return nil, nil, fmt.Errorf("counter %q of %q is not one this bailiff writes", c.Counter, c.Tenant)
		}
		n, err1 := strconv.Atoi(f[2])
		secs, err2 := strconv.ParseInt(f[3], 10, 64)
		t, err3 := time.Parse(chain.TimeFormat, c.WindowStart)
		if err := errors.Join(err1, err2, err3); err != nil {
			return nil, nil, fmt.Errorf("counter %q of %q: %v", c.Counter, c.Tenant, err)
		}
		if n < 1 || n > maxRateSlots || secs < 1 || secs > 24*3600 || c.Used != 1 {
			// No rate this bailiff loads has such a row: it was written
			// by something else, and counts read from it would be guesses.
			return nil, nil, fmt.Errorf("counter %q of %q holds a rate no policy can have", c.Counter, c.Tenant)
		}
		key := c.Tenant + "\x00" + c.Counter
		i, ok := at[key]
		if !ok {
			i = len(rs)
			at[key] = i
			rs = append(rs, engine.RateSlots{Scope: f[4], By: f[1], Who: c.Tenant, N: n, Per: time.Duration(secs) * time.Second})
		}
		rs[i].Times = append(rs[i].Times, t)
	}
	return ps, rs, nil
}

// Headroom is each tenant's headroom under p at now: as this process
// keeps the counts, or, with a store, as the store holds them (what every
// process sharing it saved). It waits for this process's step, if one is
// running: a step holds the store's connection, which no other read may
// share; it does not take the store's lock, which would hold up the
// other processes' steps.
func (l *Ledger) Headroom(p *engine.Policy, now time.Time) ([]engine.Headroom, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.store == nil {
		return p.Headroom(l.l, now), nil
	}
	rows, _, _, err := l.store.CountersSince(0)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrLedger, err)
	}
	ps, rs, err := decodeCounters(rows)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrLedger, err)
	}
	saved := engine.NewLedger()
	saved.Restore(ps, rs)
	return p.Headroom(saved, now), nil
}
