package audit

import (
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"time"

	"bailiff/chain"
	"bailiff/engine"
	"bailiff/replay"
)

// Summary is what verified logs' sessions did within a period, counted
// across the logs: a session outside the period is not described, not its
// calls and not its policy either.
type Summary struct {
	Since, Until time.Time // zero: unbounded
	// Read counts the sessions read, in range or not; SpanFirst and
	// SpanLast bound every timed record, in range or not.
	Read                int
	SpanFirst, SpanLast time.Time
	Sessions            int
	// Policies are the policies the sessions in range were decided under,
	// by version; LastPolicy is the version of the one that started last.
	Policies   map[string]*engine.Policy
	LastPolicy string
	lastAt     time.Time
	sessionIn  map[string]string // session id -> the log it is in
	// First and Last bound the timed records in range; Untimed counts the
	// records in range that carry no real time.
	First, Last time.Time
	Untimed     int
	Calls       int
	// ByTool, ByDay and Over count each call by its final verdict:
	// allow, deny, or, for a call held at an ask, Answered when a human
	// answered it out of band (bailiff approve or decline; a retry then
	// goes through as a call of its own) and ask when no one ever did.
	// An ask settled in band counts by its answer. Asks is computed with
	// them, in one pass, so every chart and count of a pack agrees.
	ByTool  map[string]map[string]int // tool -> verdict -> n
	ByCheck map[string]int
	ByRule  map[string]int
	ByDay   map[string]map[string]int // day -> verdict -> n
	// Over is the final verdicts of the calls with a real time, over
	// time.
	Over Timeline
	Asks map[string]int // approved, declined, unanswered
	// Settled counts the answers that settled an ask in band (a grant
	// record with the final decision); an answer out of band is counted
	// in Asks only, and the retry that uses it is a call by approval.
	Settled  int
	DeniedTo map[string]int      // tainted destinations denied, by normalized form
	DestRaw  map[string][]string // normalized destination -> the forms it was written in
	Redacted int                 // calls with redacted arguments
	// ToolServers are the servers of the sessions that called or listed
	// each tool.
	ToolServers map[string]map[string]bool
	// Fixed are, per tool and server, the argument paths its pinned
	// schema fixes in some session, with the values (sorted): there they
	// pass the sink gate.
	Fixed map[string]map[string]map[string][]string
	// Flagged are the first calls in range (by log, then seq) a
	// reviewer must look at: denied, or asked and never answered;
	// FlaggedCalls counts them all.
	Flagged      []*CallRow
	FlaggedCalls int
	// Actors are the principals the sessions in range acted for.
	Actors map[actorKey]*Actor
	tenants
	actor    *Actor         // the session being added's
	curLog   string         // the log being added
	logOrder map[string]int // the order logs were added in
}

// NewSummary is an empty summary of the records in [since, until).
func NewSummary(since, until time.Time) *Summary {
	return &Summary{Since: since, Until: until, Policies: map[string]*engine.Policy{}, sessionIn: map[string]string{},
		ByTool: map[string]map[string]int{}, ByCheck: map[string]int{}, ByRule: map[string]int{},
		ByDay: map[string]map[string]int{}, Asks: map[string]int{}, DeniedTo: map[string]int{},
		DestRaw: map[string][]string{}, ToolServers: map[string]map[string]bool{}, Fixed: map[string]map[string]map[string][]string{}}
}

// LogRead is what reading one log's sessions found.
type LogRead struct {
	HasOutput bool  // some call's output was recorded
	Err       error // the records could not all be read
	// Records and Root are the count and Merkle root of the records read:
	// the caller compares them with what verify read, so a log changed
	// between the two reads is not summarized as the verified one.
	Records int64
	Root    chain.Hash
}

// Add counts one verified, evidential log's sessions. Its error is a
// session that is in another log too, which would be counted twice.
func (s *Summary) Add(name string, r io.Reader, ev chain.EvidenceStore) (LogRead, error) {
	var read LogRead
	var dup error
	if s.logOrder == nil {
		s.logOrder = map[string]int{}
	}
	if _, ok := s.logOrder[name]; !ok {
		s.logOrder[name] = len(s.logOrder)
	}
	s.curLog = name
	rd := chain.NewReader(r)
	read.Err = readSessions(name, rd, ev, func(ls LogSession) error {
		s.Read++
		if prev, ok := s.sessionIn[ls.ID()]; ok && prev != name && dup == nil {
			dup = fmt.Errorf("session %s is in both %s and %s: one session in two logs would be counted twice (are they copies, or two gateways reusing ids?)", ls.ID(), prev, name)
		}
		s.sessionIn[ls.ID()] = name
		for _, e := range ls.Events {
			read.HasOutput = read.HasOutput || e.Result != nil
		}
		if err := s.session(ls); err != nil {
			// A summary that silently lost part of a session would be
			// believed: it fails instead.
			return fmt.Errorf("%s: session %s: %v", name, ls.ID(), err)
		}
		return nil
	})
	read.Records, read.Root = rd.Count(), rd.Root()
	return read, dup
}

func (s *Summary) inRange(t time.Time) bool {
	return (s.Since.IsZero() || !t.Before(s.Since)) && (s.Until.IsZero() || t.Before(s.Until))
}

func (s *Summary) sawServer(ref engine.ToolRef) {
	if s.ToolServers[ref.Tool] == nil {
		s.ToolServers[ref.Tool] = map[string]bool{}
	}
	s.ToolServers[ref.Tool][ref.Server] = true
}

// session counts one session, if it has a record in range.
func (s *Summary) session(ls LogSession) error {
	inside := s.Since.IsZero() && s.Until.IsZero()
	var start time.Time
	for _, e := range ls.Events {
		if !realTime(e.At) {
			continue
		}
		if start.IsZero() {
			start = e.At
		}
		if s.SpanFirst.IsZero() || e.At.Before(s.SpanFirst) {
			s.SpanFirst = e.At
		}
		if e.At.After(s.SpanLast) {
			s.SpanLast = e.At
		}
		inside = inside || s.inRange(e.At)
	}
	if !inside {
		return nil
	}
	s.Sessions++
	s.Policies[ls.Policy.Version()] = ls.Policy
	server := ""
	s.actor = nil
	if len(ls.Events) > 0 && ls.Events[0].Start != nil {
		st := ls.Events[0].Start.Body
		server = st.Server
		s.actor = s.actorOf(st.Principal)
		s.tenant = st.Principal.Tenant
		if s.tenant == "" {
			s.tenant = engine.LocalTenant
		}
		multi := spansServers(server, ls.Events)
		for _, t := range st.Tools {
			ref := engine.ToolRef{Server: server, Tool: t.Name}
			if multi {
				// A session that spans several servers (a gateway's)
				// lists each tool as "<server>.<tool>", read back at the
				// first dot as the engine reads its pins: a server name
				// with a dot is refused there.
				if r, ok := engine.ParseToolRef(t.Name); ok {
					ref = r
				}
			}
			s.sawServer(ref)
			on, name := ref.Server, ref.Tool
			for path, vals := range t.Fixed {
				if s.Fixed[name] == nil {
					s.Fixed[name] = map[string]map[string][]string{}
				}
				if s.Fixed[name][on] == nil {
					s.Fixed[name][on] = map[string][]string{}
				}
				all := append(s.Fixed[name][on][path], vals...)
				slices.Sort(all)
				s.Fixed[name][on][path] = slices.Compact(all)
			}
		}
	}
	// The last session is the one that started last, whichever log and
	// whatever order the logs were given in; untimed sessions fall back
	// to that order.
	if realTime(start) {
		if !start.Before(s.lastAt) {
			s.LastPolicy, s.lastAt = ls.Policy.Version(), start
		}
	} else if s.lastAt.IsZero() {
		s.LastPolicy = ls.Policy.Version()
	}
	return s.events(ls.Policy, server, ls.Events)
}

func (s *Summary) call(server, day string, c *engine.Call, d engine.Decision) {
	s.Calls++
	if s.actor != nil {
		s.actor.Calls++
		if d.Verdict == engine.Deny {
			s.actor.Denied++
		}
	}
	ref := c.ToolRef
	if ref.Server == "" {
		// A call names its server in a gateway's session, which fronts
		// several: the one it went to, which the policy decided it by.
		ref.Server = server
	}
	s.sawServer(ref)
	v := string(d.Verdict)
	if s.ByTool[c.Tool] == nil {
		s.ByTool[c.Tool] = map[string]int{}
	}
	s.ByTool[c.Tool][v]++
	s.ByCheck[string(d.Check)]++
	if d.Rule != "" {
		s.ByRule[d.Rule]++
	}
	if s.ByDay[day] == nil {
		s.ByDay[day] = map[string]int{}
	}
	s.ByDay[day][v]++
	if len(c.Redacted) > 0 {
		s.Redacted++
	}
	if d.Verdict == engine.Deny && d.Check == engine.CheckTaint {
		dest, raw := d.Destination, writtenDestination(d.Reason)
		if dest == "" {
			dest = "(redacted)"
		}
		// The reason quotes the argument's path too, which the caller
		// chose: a quoted form that does not read as the decided
		// destination is not shown as it.
		if raw == "" || engine.Normalize(raw) != d.Destination {
			raw = dest
		}
		s.DeniedTo[dest]++
		if !slices.Contains(s.DestRaw[dest], raw) {
			s.DestRaw[dest] = append(s.DestRaw[dest], raw)
		}
	}
}

// realTime tells whether t is a time a record was written at, not a
// placeholder: zero, or the clock bailiff record gives events without
// "at" (Epoch plus whole seconds, one per trace line), which would
// otherwise show as a period in January 2000 that never happened.
func realTime(t time.Time) bool {
	if t.IsZero() {
		return false
	}
	// Older record stamped events without "at" at the epoch plus their
	// line in seconds: whole seconds within days of it. A real time is
	// anything else, a real log of early 2000 included.
	d := t.Sub(replay.Epoch)
	return d < 0 || d >= 1<<20*time.Second || t.Nanosecond() != 0
}

// writtenDestination is the destination as the call wrote it, which the
// taint check's reason quotes; the decision's Destination is normalized
// (lower-cased), which is how calls are counted but not what was sent.
func writtenDestination(reason string) string {
	m := quotedDest.FindStringSubmatch(reason)
	if m == nil {
		return ""
	}
	s, err := strconv.Unquote(m[1])
	if err != nil {
		return ""
	}
	return s
}

var quotedDest = regexp.MustCompile(`^destination \S+ ("(?:[^"\\]|\\.)*")`)

// spansServers tells whether a session's calls go to servers other than
// its own: a gateway's session, whose tools are listed by server.
func spansServers(server string, events []Event) bool {
	for _, e := range events {
		if e.Call != nil && e.Call.Call.Server != "" && e.Call.Call.Server != server {
			return true
		}
	}
	return false
}
