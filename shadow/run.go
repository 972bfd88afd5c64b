package shadow

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"

	"bailiff/audit"
	"bailiff/chain"
	"bailiff/engine"
	"bailiff/replay"
)

// Input is one file of history: a hand-written trace or an audit log.
type Input struct {
	Name string
	// Path is the file an audit log is read from, when it is not Name:
	// a log given on standard input is spooled to a file, since it is
	// read more than once.
	Path string
	// Trace holds a trace's events; nil for an audit log, which is read
	// from Name (with its evidence beside it) each time it is compared.
	Trace []replay.Event
	// Progress, when set, is written every byte of the log as it is read,
	// for a progress bar.
	Progress io.Writer
	// Together, when set (the same function on every audit log of the
	// inputs), verifies those logs together, as verify reads several,
	// and in the same read tells follows[k] each session's history of the
	// k-th of them, in input order: a log compared against its recorded
	// verdicts is then read once, not once to verify it and again to
	// compare, and sessions that count across sessions (tenant budgets,
	// rates) are followed in time order across all of the logs. It must
	// fail for a log with any finding, since a follower is told only what
	// verify could apply. ordered tells verify which sessions count,
	// under their policy or a candidate's. Unused with a baseline policy,
	// whose verdicts make a history of their own.
	Together func(follows []Follow, ordered func(*engine.Policy) bool) error
}

// File is the file the input's log is read from.
func (in Input) File() string {
	if in.Path != "" {
		return in.Path
	}
	return in.Name
}

// isLog tells whether a file is an audit log rather than a trace, by its
// first bytes.
func isLog(name string) (bool, error) {
	f, err := os.Open(name)
	if err != nil {
		return false, err
	}
	defer f.Close()
	head := make([]byte, 64)
	n, _ := io.ReadFull(bufio.NewReader(f), head)
	return chain.StartsLikeLog(head[:n]), nil
}

// ReadInput reads a trace into memory, or notes an audit log to stream.
func ReadInput(name string) (Input, error) {
	log, err := isLog(name)
	if err != nil {
		return Input{}, err
	}
	if log {
		return Input{Name: name}, nil
	}
	data, err := os.ReadFile(name)
	if err != nil {
		return Input{}, err
	}
	events, err := replay.ParseTrace(name, bytes.NewReader(data))
	if err != nil {
		return Input{}, err
	}
	return Input{Name: name, Trace: events}, nil
}

// Candidate derives the candidate policy from the baseline policy of a
// session (for ablation: the same policy minus one check).
type Candidate func(base *engine.Policy) (*engine.Policy, error)

// Fixed is a candidate that does not depend on the baseline.
func Fixed(p *engine.Policy) Candidate {
	return func(*engine.Policy) (*engine.Policy, error) { return p, nil }
}

// Compare runs every input under a baseline and a candidate and calls fn
// with every call's pair, input by input and session by session. For a
// trace the baseline is base, which must be set. For an audit log it is
// the recorded verdicts under each session's recorded policy, or, when
// base is set, base's verdicts recomputed on the recorded history.
func Compare(inputs []Input, base *engine.Policy, cand Candidate, fn func(Pair)) error {
	return CompareAs(inputs, base, cand, nil, fn)
}

// Remap is the principal a candidate's side of a session acts for, given
// the one the session recorded: a candidate identity mapping grants a
// verified principal's groups other scopes. Remap must not change a
// principal it has no mapping for (one no token established).
type Remap func(engine.Principal) engine.Principal

// CompareAs is Compare with the candidate acting, in every session, for
// remap's principal (nil: the recorded one).
func CompareAs(inputs []Input, base *engine.Policy, cand Candidate, remap Remap, fn func(Pair)) error {
	return compareEach(inputs, base, []Candidate{cand}, remap, func(_ int, p Pair) { fn(p) })
}

// compareEach is Compare under several candidates in one pass over the
// inputs: each session is read and decoded once, then compared under
// every candidate in turn, each from its own fresh state, so a
// candidate's pairs are exactly what Compare would give it alone. fn gets
// the candidate's index with each pair.
func compareEach(inputs []Input, base *engine.Policy, cands []Candidate, remap Remap, fn func(int, Pair)) error {
	// A session id names one session: the same id in two logs is one
	// session counted twice (a copy), or ids reused, and either way a
	// count over both is wrong.
	// Traces may reuse ids among themselves (each is written by hand),
	// but a log and the trace it was recorded from are one session too.
	seen := map[string]string{}
	for _, in := range inputs {
		for _, e := range in.Trace {
			if e.Start != nil {
				if _, ok := seen[e.Start.Session]; !ok {
					seen[e.Start.Session] = in.Name
				}
			}
		}
	}
	followed := false
	for _, in := range inputs {
		if in.Trace != nil {
			if base == nil {
				return fmt.Errorf("%s is a trace: a trace has no recorded verdicts, so it needs a baseline policy", in.Name)
			}
			for i, cand := range cands {
				c, err := cand(base)
				if err != nil {
					return err
				}
				if err := compareSessions(base, []*engine.Policy{c}, remap, in.Name, audit.TraceSteps(in.Trace), func(_ int, p Pair) { fn(i, p) }); err != nil {
					return err
				}
			}
			continue
		}
		var err error
		switch {
		case in.Together != nil && base == nil && followed:
			continue // compared with the first of them
		case in.Together != nil && base == nil:
			followed = true
			err = followLogs(inputs, cands, remap, seen, fn)
		default:
			err = compareLog(in, base, cands, remap, seen, fn)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// forget drops recorded decisions, so a baseline policy decides instead.
func forget(events []audit.Event) {
	for i := range events {
		if events[i].Call != nil {
			events[i].Call.Recorded = nil
		}
		if events[i].Grant != nil {
			events[i].Grant.Recorded = nil
		}
	}
}

// compareLog compares the sessions of one audit log on every core: a
// session is read whole, then handed to a worker; fn is called under a
// lock, in no particular order across sessions.
func compareLog(in Input, base *engine.Policy, cands []Candidate, remap Remap, seen map[string]string, fn func(int, Pair)) error {
	name := in.Name
	f, err := os.Open(in.File())
	if err != nil {
		return err
	}
	defer f.Close()
	var r io.Reader = f
	if in.Progress != nil {
		r = io.TeeReader(f, in.Progress)
	}
	var (
		mu    sync.Mutex
		first error
		wg    sync.WaitGroup
	)
	emit := func(i int, p Pair) {
		mu.Lock()
		fn(i, p)
		mu.Unlock()
	}
	work := make(chan audit.LogSession, runtime.GOMAXPROCS(0))
	for i := 0; i < runtime.GOMAXPROCS(0); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := range work {
				err := compareSafely(name, base, cands, remap, s, emit)
				audit.Recycle(s.Events)
				if err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	err = audit.LogSessions(name, bufio.NewReaderSize(r, 1<<20), chain.OpenEvidence(chain.EvidenceDir(in.File())), func(s audit.LogSession) error {
		if p := sessionPolicy(s, base); p != nil && counts(p, cands) {
			// Sessions compared apart, each from a fresh state, would
			// each spend from a tenant's untouched ceiling.
			return fmt.Errorf("%s: session %s is under tenant budgets or rates, which count across sessions: compare the log against its recorded verdicts, verified (without --baseline or --allow-unverified)", name, s.ID())
		}
		if prev, ok := seen[s.ID()]; ok && prev != name {
			return fmt.Errorf("session %s is in both %s and %s: one session in two logs would be counted twice (are they copies, or two gateways reusing ids?)", s.ID(), prev, name)
		}
		seen[s.ID()] = name
		work <- s
		return nil
	})
	close(work)
	wg.Wait()
	if err != nil {
		return err
	}
	return first
}

// compareSafely compares one session, turning a panic into an error that
// fails the run: a table that silently lost a session would be a lie.
func compareSafely(name string, base *engine.Policy, cands []Candidate, remap Remap, s audit.LogSession, emit func(int, Pair)) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: internal error: %v", name, r)
		}
	}()
	b := s.Policy
	if base != nil {
		b = base
		forget(s.Events)
	}
	// Every candidate over one pass of the session: the baseline's
	// history is applied, and each output analyzed, once for all.
	cs := make([]*engine.Policy, len(cands))
	for i, cand := range cands {
		c, err := cand(b)
		if err != nil {
			return err
		}
		cs[i] = c
	}
	return compareSessions(b, cs, remap, name, s.Events, emit)
}

// sessionPolicy is the policy a log's session is compared under: the
// baseline when one is given, else its own recorded one (nil when it has
// none that loads).
func sessionPolicy(s audit.LogSession, base *engine.Policy) *engine.Policy {
	if base != nil {
		return base
	}
	return s.Policy
}
