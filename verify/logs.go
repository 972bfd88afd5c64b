package verify

import (
	"bytes"
	"container/heap"
	"fmt"
	"io"
	"sync"

	"bailiff/audit"
	"bailiff/chain"
	"bailiff/engine"
)

// Input is one log of several verified together.
type Input struct {
	Name     string
	R        io.Reader
	Evidence chain.EvidenceStore
	// Follow, when set, is this log's instead of Options.Follow.
	Follow FollowFunc
}

// Logs checks logs together, as Log checks one, with one report each.
// Their sessions are verified in parallel, but those whose policy counts
// across sessions (tenant budgets, rates; Options.Ordered) are taken one
// record at a time, in time order across all the logs, on one ledger:
// the gateways that wrote them took their steps on the counts in that
// order, so each decision is recomputed on exactly what it saw. A log
// of a gateway that shared a tenant with another must be verified with
// it, or a refusal that rests on the other's spending is a finding.
func Logs(inputs []Input, opt Options) ([]*Report, error) {
	if opt.Checkpoint != nil && len(inputs) != 1 {
		// A checkpoint signs one log: held against several, it would
		// report every other one truncated or rewritten.
		return nil, fmt.Errorf("a checkpoint is for one log, and %d were given", len(inputs))
	}
	reps := make([]*Report, len(inputs))
	for i, in := range inputs {
		reps[i] = &Report{File: in.Name, Checked: !opt.IntegrityOnly, Checkpoint: opt.Checkpoint}
	}
	if opt.IntegrityOnly {
		errs := make([]error, len(inputs))
		var wg sync.WaitGroup
		for i, in := range inputs {
			wg.Go(func() { errs[i] = verifyIntegrity(reps[i], in.R, opt) })
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				return nil, &LogError{Log: i, Err: err}
			}
		}
		return reps, nil
	}
	vs := make([]*verifier, len(inputs))
	rds := make([]*chain.Reader, len(inputs))
	texts := audit.NewTexts()
	for i, in := range inputs {
		follow := opt.Follow
		if in.Follow != nil {
			follow = in.Follow
		}
		vs[i] = &verifier{file: in.Name, cache: audit.NewSharedCache(in.Evidence, texts), key: opt.Key, approvers: opt.ApproverKeys, follow: follow}
		if a, ok := in.Evidence.(interface{ Absent() bool }); ok && a.Absent() {
			vs[i].noStore = true
		}
		rds[i] = chain.NewReader(inputs[i].R)
	}
	ordered := opt.Ordered
	if ordered == nil {
		ordered = (*engine.Policy).HasLimits
	}
	p := startPool(vs, opt.Workers, ordered, opt.Ordered == nil)
	readErrs := make([]error, len(inputs))
	if len(inputs) == 1 {
		readErrs[0] = vs[0].read(reps[0], rds[0], func(rec chain.Record) { p.send(0, rec) }, opt.Checkpoint)
	} else {
		merge(vs, rds, reps, p, readErrs, opt.Checkpoint)
	}
	// Every worker is drained and joined before any error returns, so
	// none is left blocked on its channel and none of their failures is
	// missed.
	p.wait()
	for i, err := range readErrs {
		if err != nil {
			return nil, &LogError{Log: i, Err: inputError(inputs[i].Name, err)}
		}
	}
	if err := p.err(); err != nil {
		return nil, err
	}
	crossLogUses(p, reps)
	for i, rep := range reps {
		if err := finish(rep, rds[i], vs[i], p, i, opt.Checkpoint); err != nil {
			return nil, &LogError{Log: i, Err: err}
		}
	}
	return reps, nil
}

// LogError is an error about one log of several: no report is made of
// any of them, since a report on some would read as one on all.
type LogError struct {
	Log int // its index in the inputs
	Err error
}

func (e *LogError) Error() string { return e.Err.Error() }
func (e *LogError) Unwrap() error { return e.Err }

// merge reads every log in its own goroutine, and hands their records to
// the pool in time order (a log's own order kept; at one time, the log
// given first goes first).
func merge(vs []*verifier, rds []*chain.Reader, reps []*Report, p *pool, readErrs []error, cp *chain.Checkpoint) {
	// The records read ahead of the merge are bounded in all, not per
	// log: a hundred logs read a hundred times as far ahead otherwise.
	ahead := min(256, max(8, 4096/max(len(vs), 1)))
	chans := make([]chan chain.Record, len(vs))
	for i := range vs {
		chans[i] = make(chan chain.Record, ahead)
		go func() {
			defer close(chans[i])
			readErrs[i] = vs[i].read(reps[i], rds[i], func(rec chain.Record) { chans[i] <- rec }, cp)
		}()
	}
	// The next record is the earliest head of the logs still open: a
	// heap, so a record costs the log of the logs given, not their count.
	h := make(heads, 0, len(vs))
	for i := range chans {
		if rec, ok := <-chans[i]; ok {
			h = append(h, head{rec, i})
		}
	}
	heap.Init(&h)
	for len(h) > 0 {
		next := h[0].log
		p.send(next, h[0].rec)
		if rec, ok := <-chans[next]; ok {
			h[0].rec = rec
			heap.Fix(&h, 0)
		} else {
			heap.Pop(&h)
		}
	}
}

// heads are the next records of the logs being merged, earliest first;
// at one time, the log given first.
type head struct {
	rec chain.Record
	log int
}

type heads []head

func (h heads) Len() int { return len(h) }
func (h heads) Less(i, j int) bool {
	if !h[i].rec.TS.Equal(h[j].rec.TS) {
		return h[i].rec.TS.Before(h[j].rec.TS)
	}
	return h[i].log < h[j].log
}
func (h heads) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *heads) Push(x any)   { *h = append(*h, x.(head)) }
func (h *heads) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// finish completes one log's report once every worker is done.
func finish(rep *Report, rd *chain.Reader, v *verifier, p *pool, i int, cp *chain.Checkpoint) error {
	rep.Records, rep.Root = rd.Count(), rd.Root()
	if rep.Records == 0 && len(rep.Findings) == 0 {
		return inputError(rep.File, chain.ErrEmptyLog)
	}
	if cp != nil && rd.Count() < cp.Size && len(rep.Findings) == 0 {
		rep.Findings = append(rep.Findings, Finding{File: rep.File, Seq: rd.Count(), Kind: FindCheckpoint,
			Recorded: fmt.Sprintf("%d records", rd.Count()), Recomputed: fmt.Sprintf("%d records", cp.Size),
			Reason: fmt.Sprintf("the log was truncated: the checkpoint covers %d records and the log has %d", cp.Size, rd.Count())})
	}
	p.merge(rep, i)
	rep.Findings = append(rep.Findings, v.findings...)
	sortReport(rep)
	return nil
}

// Counting keys as a session record holds its policy: a policy without
// them has no limits, and its session need not be decoded to tell.
var (
	tenantsKey = []byte(`\"tenants\":`)
	rateKey    = []byte(`\"rate\":`)
)

// isOrdered tells whether the session a session record starts is decided
// under a policy ordered says must be taken in time order.
func isOrdered(v *verifier, rec chain.Record, ordered func(*engine.Policy) bool, quick bool) bool {
	if quick && !bytes.Contains(rec.Body, tenantsKey) && !bytes.Contains(rec.Body, rateKey) {
		return false
	}
	var b audit.SessionBody
	if chain.DecodeBody(rec.Body, &b) != nil {
		return false // the worker reports it
	}
	pol, problem := v.cache.Policy(b.Policy, b.PolicyVersion)
	return problem == "" && ordered(pol)
}
