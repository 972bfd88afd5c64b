package proxy

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"bailiff/engine"
)

// pumps are a gateway's stateless sessions on HTTP, each with its own
// pump, servers and audit session, so one client's reads never taint
// another's sends and one client's calls never spend another's budget.
// (A handshake session, Mcp-Session-Id, is a relay session of its own:
// runhttp.go.) A stateless request (2026-07-28) names no session: the
// requests of one principal share one, opened at the first tools/list
// or tools/call, and without identity, where every request acts for the
// gateway's one principal, all stateless requests share one
// (docs/decisions.md). The principals served count both kinds.
//
// With identity, a session's principal is the one its token names, and
// at most max principals are served at once. A principal's groups and
// scopes are part of who it is: a token naming the same subject with
// other groups is another principal.
type pumps struct {
	ctx      context.Context
	opt      Options
	ups      []Upstream
	authed   bool          // requests carry verified principals
	max      int           // distinct principals served at once, when authed
	maxPumps int           // sessions running their servers at once
	idle     time.Duration // a stateless session unused this long ends
	logf     func(string, ...any)

	quit chan struct{} // closed when the gateway stops

	mu     sync.Mutex
	by     map[string]*pumpEntry
	served map[string]int // live pumps by principal key
	opened *atomic.Int64  // sessions opened so far, for session ids (shared with relaySessions)
	closed bool
	wg     sync.WaitGroup
	told   time.Time // when a refusal was last logged
	// relayed counts the handshake sessions (relaySessions), which run
	// servers too.
	relayed func() int
}

type pumpEntry struct {
	mux       *muxStream
	principal string        // its principal's key
	last      time.Time     // its last request, under pumps.mu
	done      chan struct{} // closed when its servers have stopped
	err       error
}

func newPumps(ctx context.Context, opt Options, ups []Upstream, hopt HTTPOptions, logf func(string, ...any)) *pumps {
	return &pumps{ctx: ctx, opt: opt, ups: ups, authed: hopt.Authenticate != nil, max: hopt.MaxPrincipals,
		maxPumps: hopt.MaxServerSessions, idle: hopt.SessionTimeout, logf: logf,
		by: map[string]*pumpEntry{}, served: map[string]int{}, quit: make(chan struct{}), opened: new(atomic.Int64)}
}

// principalKey is who p is, as a map key: the groups in any order are
// the same groups. No part holds \x00 or \x01 (identity refuses control
// characters in names).
func principalKey(p engine.Principal) string {
	groups := slices.Sorted(slices.Values(p.Groups))
	return strings.Join([]string{p.Issuer, p.Subject, p.Email, strings.Join(groups, "\x00"), strings.Join(p.Scopes, "\x00")}, "\x01")
}

// admit refuses a principal the gateway cannot serve, before its session
// opens: one more than max.
func (pp *pumps) admit(p engine.Principal) error {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	return pp.roomFor(principalKey(p), p)
}

// hold takes a place for p's handshake session (relaySessions), which
// letGo gives back.
func (pp *pumps) hold(p engine.Principal) error {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	pk := principalKey(p)
	if err := pp.roomFor(pk, p); err != nil {
		return err
	}
	pp.served[pk]++
	return nil
}

func (pp *pumps) letGo(p engine.Principal) {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	pk := principalKey(p)
	if pp.served[pk]--; pp.served[pk] <= 0 {
		delete(pp.served, pk)
	}
}

// keys lists the stateless sessions running now.
func (pp *pumps) keys() iter.Seq[string] {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	return slices.Values(slices.Collect(maps.Keys(pp.by)))
}

func (pp *pumps) roomFor(pk string, p engine.Principal) error {
	if !pp.authed || pp.served[pk] > 0 || len(pp.served) < pp.max {
		return nil
	}
	err := fmt.Errorf("the gateway already serves %s (--max-principals), each until its sessions end: no session for %q", plural(pp.max, "principal"), p.Subject)
	pp.refused(err)
	return err
}

// route sends a tools/list or tools/call to its client's session.
func (pp *pumps) route(req mcp.Request) (*muxStream, error) {
	p := pp.opt.Principal
	if pp.authed {
		ok := false
		if x := req.GetExtra(); x != nil && x.TokenInfo != nil {
			p, ok = x.TokenInfo.Extra[principalExtra].(engine.Principal)
		}
		if !ok {
			// The bearer middleware lets nothing through without it.
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "bailiff: a request with no verified principal"}
		}
	}
	pk := principalKey(p)
	m, err := pp.get("principal\x02"+pk, pk, p)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "bailiff: " + err.Error()}
	}
	return m, nil
}

// get is the pump for key, opened if this is its first request; it ends
// when it has gone unused for the idle timeout. A pump whose servers
// stopped stays, refusing, until then: a session never starts clean
// behind its client's back.
func (pp *pumps) get(key, pk string, p engine.Principal) (*muxStream, error) {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	if e := pp.by[key]; e != nil {
		e.last = time.Now()
		select {
		case <-e.done:
			return nil, fmt.Errorf("this session has ended: %v", e.err)
		default:
			return e.mux, nil
		}
	}
	if pp.closed {
		return nil, errors.New("the gateway is shutting down")
	}
	if err := pp.roomFor(pk, p); err != nil {
		return nil, err
	}
	if len(pp.by)+pp.relayed() >= pp.maxPumps {
		err := fmt.Errorf("the gateway runs the servers of %s already (--max-server-sessions): end a session (DELETE), or wait for one to go idle (a session unused for %v ends)", plural(pp.maxPumps, "session"), pp.idle)
		pp.refused(err)
		return nil, err
	}
	o := pp.opt
	o.Principal = p
	o.Session = fmt.Sprintf("%s-%d", pp.opt.Session, pp.opened.Add(1))
	mux := newMuxStream()
	px := newProxyOn(o, mux)
	e := &pumpEntry{mux: mux, principal: pk, done: make(chan struct{}), last: time.Now()}
	pp.by[key] = e
	pp.served[pk]++
	switch {
	case pp.authed:
		pp.logf("session %s acts for %q (token from %s; scopes %q)", o.Session, p.Subject, p.Issuer, p.Scopes)
	default:
		pp.logf("session %s holds the stateless requests (2026-07-28), which every client without a session shares", o.Session)
	}
	pp.wg.Add(2)
	go func() {
		defer pp.wg.Done()
		e.err = runGateway(pp.ctx, px, freshUpstreams(pp.ups))
		if e.err == nil {
			e.err = errors.New("its servers have stopped")
		}
		mux.close()
		close(e.done)
		pp.mu.Lock()
		if pp.served[pk]--; pp.served[pk] <= 0 {
			delete(pp.served, pk) // its principal's place is free
		}
		pp.mu.Unlock()
	}()
	go func() {
		defer pp.wg.Done()
		pp.expire(key, e)
	}()
	return mux, nil
}

// expire ends e once it has gone unused for the idle timeout. The entry
// goes then, and the principal's next request opens another.
func (pp *pumps) expire(key string, e *pumpEntry) {
	tick := time.NewTicker(max(pp.idle/10, 10*time.Millisecond))
wait:
	for {
		select {
		case <-pp.quit:
			break wait
		case <-tick.C:
			pp.mu.Lock()
			idle := time.Since(e.last) > pp.idle
			pp.mu.Unlock()
			if idle {
				break wait
			}
		}
	}
	tick.Stop()
	e.mux.close()
	<-e.done
	pp.mu.Lock()
	if pp.by[key] == e {
		delete(pp.by, key)
	}
	pp.mu.Unlock()
}

// refused tells the operator, at most once a refusalLogEvery.
func (pp *pumps) refused(err error) {
	if now := time.Now(); now.Sub(pp.told) >= refusalLogEvery {
		pp.told = now
		pp.logf("refused a session: %v", err)
	}
}

// close ends every session and waits for their servers to stop.
func (pp *pumps) close() {
	pp.mu.Lock()
	pp.closed = true
	close(pp.quit)
	for _, e := range pp.by {
		e.mux.close()
	}
	pp.mu.Unlock()
	pp.wg.Wait()
}

// freshUpstreams are ups with commands that have not run: a command runs
// once, and every session starts its servers anew.
func freshUpstreams(ups []Upstream) []Upstream {
	out := make([]Upstream, len(ups))
	for i, u := range ups {
		out[i] = u
		if u.Cmd != nil {
			out[i].Cmd = &exec.Cmd{Path: u.Cmd.Path, Args: u.Cmd.Args, Env: u.Cmd.Env, Dir: u.Cmd.Dir, Stderr: u.Cmd.Stderr, Err: u.Cmd.Err}
		}
	}
	return out
}

// plural is n and the noun, plural unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
