package proxy

import (
	"context"
	"fmt"
	"iter"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"golang.org/x/time/rate"
)

// Every handshake session the SDK's stateful handler opens stays in
// memory until its idle timeout (30 minutes), and any process on the
// machine may open them: 20,000 initialize POSTs took the gateway from
// 19 MB to 484 MB. A new session is therefore admitted only under a cap
// on those open and a rate per client address (docs/decisions.md).

const (
	// defaultMaxSessions: a session costs about 24 KB (484 MB over 20,000),
	// so 256 hold about 6 MB, yet leave room for every MCP client on a
	// desktop, each reconnecting a few times within the idle timeout.
	defaultMaxSessions = 256
	// defaultMaxPrincipals: each principal's session starts every server
	// anew, so this bounds the servers a gateway runs, not memory alone.
	defaultMaxPrincipals = 64
	// defaultMaxServerSessions: every session that calls a tool runs its
	// own servers; this bounds those processes, where the session cap
	// bounds memory.
	defaultMaxServerSessions = 64
	// defaultInitRate and defaultInitBurst: a client opens one session
	// when it starts and another when it reconnects; 2 a second after a
	// burst of 20 lets a whole editor's windows start at once, while a
	// loop of initialize from one address is slowed to what the cap and
	// the idle timeout absorb.
	defaultInitRate  = rate.Limit(2)
	defaultInitBurst = 20
	// capRetryAfter: when the cap is reached no slot frees until a client
	// ends its session or one goes idle, which cannot be predicted.
	capRetryAfter = 30 * time.Second
	// maxRetryAfter bounds the wait a refusal names, however slow the
	// rate it was given.
	maxRetryAfter = time.Hour
	// maxRateAddrs bounds the per-address limiters themselves, for a
	// gateway on --allow-remote that many addresses reach.
	maxRateAddrs = 4096
	// codeOverloaded is the JSON-RPC error of a refused session, in the
	// range the spec leaves to servers.
	codeOverloaded = -32000
)

// admission decides whether a request that would open a session may.
// With identity, the cap and the rate also hold per principal (its
// token's UserID), so one user cannot fill the gateway.
type admission struct {
	max   int
	open  func() iter.Seq[string] // the ids of the sessions open now
	addrs *addrLimiter

	perPrincipal int          // sessions one principal may hold open
	principals   *addrLimiter // the rate, by principal
	owner        map[string]string
	pendingBy    map[string]int

	logf func(string, ...any) // the operator's log; refusals are told there

	mu      sync.Mutex
	pending int // admitted, not yet a session the server lists
	refused int // since the last line logged
	told    time.Time
}

// refusalLogEvery bounds the log lines refusals cost: a flood of
// initialize must not become a flood of stderr.
const refusalLogEvery = 10 * time.Second

// note tells the operator a session was refused, at most once per
// refusalLogEvery, with how many were refused since the last line.
func (a *admission) note(why string) {
	a.mu.Lock()
	a.refused++
	now := time.Now()
	if a.logf == nil || now.Sub(a.told) < refusalLogEvery {
		a.mu.Unlock()
		return
	}
	n := a.refused
	a.refused, a.told = 0, now
	a.mu.Unlock()
	a.logf("refused %d new HTTP session(s); the last: %s", n, why)
}

// enter admits a request opening a session from addr, or says why not
// and when to try again. release ends its pending place, at the latest
// once the request is served; given its session's id and list (which
// makes the session one a.open lists), it lists it in the same step, so
// that no count sees it twice, pending and open.
func (a *admission) enter(addr, principal string) (release func(id string, list func()), refusal string, retry time.Duration) {
	if ok, wait := a.addrs.allow(addr); !ok {
		return nil, "too many initialize requests from " + addr + ": try again later", wait
	}
	if principal != "" {
		if ok, wait := a.principals.allow(principal); !ok {
			return nil, "too many initialize requests from one principal: try again later", wait
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	open, mine := a.pending, a.pendingBy[principal]
	live := map[string]bool{}
	for id := range a.open() {
		open++
		live[id] = true
		if principal != "" && a.owner[id] == principal {
			mine++
		}
	}
	for id := range a.owner {
		if !live[id] {
			delete(a.owner, id) // ended: forget whose it was
		}
	}
	if open >= a.max {
		return nil, fmt.Sprintf("the gateway's session cap is reached: %d sessions open; end one (DELETE) or wait for one to go idle", a.max), capRetryAfter
	}
	if principal != "" && mine >= a.perPrincipal {
		return nil, fmt.Sprintf("this principal holds %s, as many as one may (--max-sessions-per-principal): end one (DELETE) or wait for one to go idle", plural(mine, "session")), capRetryAfter
	}
	a.pending++
	a.pendingBy[principal]++
	var once sync.Once
	return func(id string, list func()) {
		once.Do(func() {
			a.mu.Lock()
			defer a.mu.Unlock()
			if list != nil {
				list()
			}
			a.pending--
			if a.pendingBy[principal]--; a.pendingBy[principal] <= 0 {
				delete(a.pendingBy, principal)
			}
			if principal != "" && id != "" {
				a.owner[id] = principal
			}
		})
	}, "", 0
}

// admit wraps the stateful handler: a POST without Mcp-Session-Id opens
// a session (the SDK makes one for any such POST, not only initialize),
// so each is admitted first. Requests of open sessions pass untouched.
func (a *admission) admit(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Header.Get("Mcp-Session-Id") != "" {
			next.ServeHTTP(w, r)
			return
		}
		principal := ""
		if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
			principal = ti.UserID
		}
		release, why, retry := a.enter(clientAddr(r), principal)
		if release == nil {
			a.note(why)
			refuse(w, r, why, retry)
			return
		}
		defer release("", nil)
		// The client may read the answer, and open its next session,
		// before this handler returns: the session stops counting as
		// pending once the handler lists it among the open ones
		// (admitted), or at the latest once the handler returns.
		r = r.WithContext(context.WithValue(r.Context(), admittedKey{}, release))
		next.ServeHTTP(w, r)
	})
}

// admittedKey keys, in an admitted request's context, its release.
type admittedKey struct{}

// admitted lists r's session, id, by list, and ends its pending place in
// the same step.
func admitted(r *http.Request, id string, list func()) {
	if release, ok := r.Context().Value(admittedKey{}).(func(string, func())); ok {
		release(id, list)
		return
	}
	list()
}

// clientAddr is the address a limit is kept for: the remote IP, without
// its port, which a client picks anew for every connection.
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// refuse answers 503 with Retry-After. The body is a JSON-RPC error for
// the request's id when it can be read, so an SDK client surfaces the
// reason to its caller; otherwise the reason in plain text.
func refuse(w http.ResponseWriter, r *http.Request, why string, retry time.Duration) {
	w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(min(retry, maxRetryAfter).Seconds()))))
	refuseWith(w, r, http.StatusServiceUnavailable, why)
}

// addrLimiter keeps a token bucket per client address.
type addrLimiter struct {
	limit rate.Limit
	burst int

	mu   sync.Mutex
	by   map[string]*rate.Limiter
	seen map[string]time.Time
}

func newAddrLimiter(limit rate.Limit, burst int) *addrLimiter {
	return &addrLimiter{limit: limit, burst: burst, by: map[string]*rate.Limiter{}, seen: map[string]time.Time{}}
}

// allow takes a token for addr, or says how long until one is due.
func (l *addrLimiter) allow(addr string) (bool, time.Duration) {
	if l.limit == rate.Inf {
		return true, 0
	}
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	lim := l.by[addr]
	if lim == nil {
		if len(l.by) >= maxRateAddrs && !l.sweep(now) {
			// Fail closed: forgetting an address that is still
			// refilling would hand it a fresh burst.
			return false, capRetryAfter
		}
		lim = rate.NewLimiter(l.limit, l.burst)
		l.by[addr] = lim
	}
	l.seen[addr] = now
	if lim.AllowN(now, 1) {
		return true, 0
	}
	wait := time.Second
	if l.limit > 0 {
		wait = time.Duration(float64(time.Second) / float64(l.limit))
	}
	return false, wait
}

// sweep forgets addresses whose bucket has refilled, which a new
// limiter would equal; it reports whether any was forgotten.
func (l *addrLimiter) sweep(now time.Time) bool {
	full := time.Minute
	if l.limit > 0 {
		full = time.Duration(float64(l.burst)/float64(l.limit)*float64(time.Second)) + time.Second
	}
	freed := false
	for addr, at := range l.seen {
		if now.Sub(at) > full {
			delete(l.by, addr)
			delete(l.seen, addr)
			freed = true
		}
	}
	return freed
}
