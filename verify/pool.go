package verify

import (
	"runtime"
	"sync"

	"bailiff/chain"
)

// queueLen bounds the records waiting for each worker: with the reader
// ahead of the workers, memory is at most workers × queueLen records.
const queueLen = 256

// pool is the workers that replay sessions: each session goes to one
// worker, chosen by its id, so a session's records are replayed in log
// order on one goroutine while the reader checks the chain.
type pool struct {
	chans   []chan chain.Record
	results []*sessionSet
	wg      sync.WaitGroup
}

// startPool starts workers (GOMAXPROCS when 0 or less).
func startPool(v *verifier, workers int) *pool {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	p := &pool{chans: make([]chan chain.Record, workers), results: make([]*sessionSet, workers)}
	for i := range p.chans {
		p.chans[i] = make(chan chain.Record, queueLen)
		p.results[i] = &sessionSet{v: v, sessions: map[string]*vsession{}}
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
	}
}

// send queues a record for the worker of its session.
func (p *pool) send(rec chain.Record) {
	p.chans[shard(rec.Session, len(p.chans))] <- rec
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
	for _, set := range p.results {
		rep.Findings = append(rep.Findings, set.findings...)
		rep.Unevaluable = append(rep.Unevaluable, set.unevaluable...)
		rep.Sessions += len(set.sessions)
		rep.Calls += set.calls
		rep.Contents += set.contents
	}
}
