package verify

import (
	"context"
	"runtime"
	"sync"

	"golang.org/x/sync/semaphore"

	"bailiff/chain"
)

// queueLen bounds the records waiting for each worker. It is longer than
// a typical session, so that while one worker replays a long session the
// reader can run ahead into the next one, which may be another worker's:
// a log written one session after another otherwise keeps one worker
// busy. queueBytes bounds what the waiting records hold, since a record
// with large arguments can be megabytes.
const (
	queueLen   = 4096
	queueBytes = 16 << 20
)

// pool is the workers that replay sessions: each session goes to one
// worker, chosen by its id, so a session's records are replayed in log
// order on one goroutine while the reader checks the chain.
type pool struct {
	chans   []chan chain.Record
	results []*sessionSet
	wg      sync.WaitGroup
	queued  *semaphore.Weighted // bytes of body queued, at most queueBytes
}

// startPool starts workers (GOMAXPROCS when 0 or less).
func startPool(v *verifier, workers int) *pool {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	p := &pool{chans: make([]chan chain.Record, workers), results: make([]*sessionSet, workers),
		queued: semaphore.NewWeighted(queueBytes)}
	for i := range p.chans {
		p.chans[i] = make(chan chain.Record, queueLen)
		p.results[i] = newSessionSet(v)
		p.wg.Add(1)
		go p.work(p.chans[i], p.results[i])
	}
	return p
}

func (p *pool) work(in chan chain.Record, set *sessionSet) {
	defer p.wg.Done()
	// A worker that fails keeps draining its channel, so the reader
	// never blocks, and its failure fails the whole run: a verify that
	// lost a session must never say ok.
	for rec := range in {
		if set.failed == nil {
			set.failed = safeRecord(set, rec)
		}
		p.queued.Release(queuedSize(rec))
	}
}

// send queues a record for the worker of its session.
func (p *pool) send(rec chain.Record) {
	// Background never ends, so Acquire fails only on a weight over the
	// bound, which queuedSize rules out.
	_ = p.queued.Acquire(context.Background(), queuedSize(rec))
	p.chans[shard(rec.Session, len(p.chans))] <- rec
}

// queuedSize is what a queued record counts against queueBytes; one
// larger than the bound counts as the whole bound, so it waits alone.
func queuedSize(rec chain.Record) int64 {
	return min(int64(len(rec.Body)), queueBytes)
}

// shard is FNV-1a of the session id, modulo n; computed over the string
// in place, since the hash.Hash32 route allocates for every record.
func shard(session string, n int) int {
	h := uint32(2166136261)
	for i := 0; i < len(session); i++ {
		h ^= uint32(session[i])
		h *= 16777619
	}
	return int(h % uint32(n))
}

// wait closes the queues, waits for every worker and gives back the
// spilled output of sessions that never ended.
func (p *pool) wait() {
	for _, c := range p.chans {
		close(c)
	}
	p.wg.Wait()
	for _, set := range p.results {
		set.close()
	}
}

// err is the first worker's failure, in worker order.
func (p *pool) err() error {
	for _, set := range p.results {
		if set.failed != nil {
			return set.failed
		}
		if set.fatal != nil {
			return set.fatal
		}
	}
	return nil
}

// merge adds what the workers found to rep; sortReport then puts it in
// log order.
func (p *pool) merge(rep *Report) {
	if len(p.results) > 0 {
		rep.Findings = append(rep.Findings, crossCheck(p.results, p.results[0].v.file)...)
	}
	for _, set := range p.results {
		rep.Findings = append(rep.Findings, set.findings...)
		rep.Unevaluable = append(rep.Unevaluable, set.unevaluable...)
		rep.Sessions += set.started
		rep.Calls += set.calls
		rep.Contents += set.contents
	}
}
