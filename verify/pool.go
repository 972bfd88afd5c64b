package verify

import (
	"context"
	"fmt"
	"runtime"
	"sync"

	"golang.org/x/sync/semaphore"

	"bailiff/audit"
	"bailiff/chain"
	"bailiff/engine"
)

// queueLen bounds the records waiting for each worker. It is longer than
// a typical session, so that while one worker replays a long session the
// reader can run ahead into the next one, which may be another worker's:
// a log written one session after another otherwise keeps one worker
// busy. queueBytes bounds what the waiting records hold, since a record
// with large arguments can be megabytes.
//
// Records go to a worker in batches of up to batchLen records or
// batchBytes bytes: a channel send and a semaphore turn for every record
// cost the reader about a tenth of its time. A worker never waits on
// another's records (a session is one worker's, and the evidence bound
// is taken and given back within one record), so a batch the reader has
// not sent yet delays its worker and blocks nothing; wait sends the
// rest.
const (
	queueLen   = 4096
	queueBytes = 16 << 20
	batchLen   = 64
	batchBytes = 64 << 10
)

// pool is the workers that replay sessions: each session goes to one
// worker, chosen by its id, so a session's records are replayed in log
// order on one goroutine while the reader checks the chain. The sessions
// of policies that count across sessions all go to worker 0, in the
// order they are sent, and share one ledger.
type pool struct {
	chans   []chan []item
	batches [][]item        // per worker, the records not sent yet
	bytes   []int64         // per worker, what they count against queueBytes
	results [][]*sessionSet // per worker, per log
	wg      sync.WaitGroup
	queued  *semaphore.Weighted // bytes of body queued, at most queueBytes

	vs      []*verifier
	ordered func(*engine.Policy) bool
	quick   bool             // ordered is HasLimits: a policy without limit keys has none
	lane    map[laneKey]bool // the sessions sent to worker 0 in order
}

type item struct {
	log int
	rec chain.Record
}

type laneKey struct {
	log     int
	session string
}

// startPool starts workers (GOMAXPROCS when 0 or less) for the logs of vs.
func startPool(vs []*verifier, workers int, ordered func(*engine.Policy) bool, quick bool) *pool {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	p := &pool{chans: make([]chan []item, workers), results: make([][]*sessionSet, workers),
		batches: make([][]item, workers), bytes: make([]int64, workers),
		queued: semaphore.NewWeighted(queueBytes), vs: vs, ordered: ordered, quick: quick}
	ledger := audit.NewLedger()
	for i := range p.chans {
		p.chans[i] = make(chan []item, queueLen/batchLen)
		p.results[i] = make([]*sessionSet, len(vs))
		for j, v := range vs {
			p.results[i][j] = newSessionSet(v, ledger)
		}
		p.wg.Add(1)
		go p.work(p.chans[i], p.results[i])
	}
	return p
}

func (p *pool) work(in chan []item, sets []*sessionSet) {
	defer p.wg.Done()
	// A worker that fails keeps draining its channel, so the reader
	// never blocks, and its failure fails the whole run: a verify that
	// lost a session must never say ok.
	for batch := range in {
		var n int64
		for i := range batch {
			it := &batch[i]
			if set := sets[it.log]; set.failed == nil {
				set.failed = safeRecord(set, it.rec)
			}
			n += queuedSize(it.rec)
			*it = item{} // let its body go
		}
		p.queued.Release(min(n, queueBytes)) // as sendBatch took it
	}
}

// send queues a record of log i for the worker of its session. It is
// called from one goroutine, in the order records are to be taken.
func (p *pool) send(i int, rec chain.Record) {
	w := p.worker(i, rec)
	p.batches[w] = append(p.batches[w], item{i, rec})
	p.bytes[w] += queuedSize(rec)
	if len(p.batches[w]) >= batchLen || p.bytes[w] >= batchBytes {
		p.sendBatch(w)
	}
}

// sendBatch hands worker w the records batched for it.
func (p *pool) sendBatch(w int) {
	if len(p.batches[w]) == 0 {
		return
	}
	// Background never ends, so Acquire fails only on a weight over the
	// bound; a batch is sent once it reaches batchBytes, and one record
	// counts at most queueBytes, so a batch counts at most twice that.
	n := min(p.bytes[w], queueBytes)
	_ = p.queued.Acquire(context.Background(), n)
	p.chans[w] <- p.batches[w]
	p.batches[w], p.bytes[w] = make([]item, 0, batchLen), 0
}

// worker is the worker a record goes to: its session's, worker 0 for a
// session whose policy counts across sessions. A session once in the lane
// stays there (a second session record is a finding of worker 0's).
func (p *pool) worker(i int, rec chain.Record) int {
	k := laneKey{i, rec.Session}
	if p.lane[k] {
		return 0
	}
	if rec.Kind == chain.KindSession && isOrdered(p.vs[i], rec, p.ordered, p.quick) {
		if p.lane == nil {
			p.lane = map[laneKey]bool{}
		}
		p.lane[k] = true
		return 0
	}
	return shard(rec.Session, i, len(p.chans))
}

// queuedSize is what a queued record counts against queueBytes; one
// larger than the bound counts as the whole bound, so it waits alone.
func queuedSize(rec chain.Record) int64 {
	return min(int64(len(rec.Body)), queueBytes)
}

// shard is FNV-1a of the session id, from a start of the log's index,
// modulo n; computed over the string in place, since the hash.Hash32
// route allocates for every record.
func shard(session string, log, n int) int {
	h := uint32(2166136261) + uint32(log)
	for i := 0; i < len(session); i++ {
		h ^= uint32(session[i])
		h *= 16777619
	}
	return int(h % uint32(n))
}

// wait closes the queues, waits for every worker and gives back the
// spilled output of sessions that never ended.
func (p *pool) wait() {
	for w, c := range p.chans {
		p.sendBatch(w)
		close(c)
	}
	p.wg.Wait()
	for _, sets := range p.results {
		for _, set := range sets {
			set.close()
		}
	}
}

// err is the first worker's failure, in worker and log order.
func (p *pool) err() error {
	for _, sets := range p.results {
		for i, set := range sets {
			if set.failed != nil {
				return &LogError{Log: i, Err: fmt.Errorf("%s: %w", set.v.file, set.failed)}
			}
			if set.fatal != nil {
				return &LogError{Log: i, Err: fmt.Errorf("%s: %w", set.v.file, set.fatal)}
			}
		}
	}
	return nil
}

// merge adds what the workers found in log i to rep; sortReport then
// puts it in log order.
func (p *pool) merge(rep *Report, i int) {
	sets := make([]*sessionSet, len(p.results))
	for w := range p.results {
		sets[w] = p.results[w][i]
	}
	if len(sets) > 0 {
		rep.Findings = append(rep.Findings, crossCheck(sets, sets[0].v.file)...)
	}
	for _, set := range sets {
		rep.Findings = append(rep.Findings, set.findings...)
		rep.Unevaluable = append(rep.Unevaluable, set.unevaluable...)
		rep.Sessions += set.started
		rep.Calls += set.calls
		rep.Contents += set.contents
	}
}
