package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"time"

	"bailiff/audit"
	"bailiff/engine"
)

// Recorded is a pending ask as the gateway's audit log records it: what a
// human should read and sign, whatever the state database says.
type Recorded struct {
	Found     bool
	Approval  audit.Approval // the ask to sign, Answer and Time unset
	Args      map[string]any // the call's arguments as logged (after redaction)
	Redacted  []string
	Verdict   string // the call's recorded verdict
	Reason    string // why the policy asks, as logged
	Asked     time.Time
	Principal string   // the session's subject, who may not approve
	Approvers []string // the approver keys the session trusts
	// Differs names the fields where the state database's ask disagrees with the
	// log ("" when it agrees).
	Differs string
	// Ended is set when the ask's session has ended: its call can no
	// longer be retried, so an answer would approve nothing.
	Ended bool
	// Inconsistent says why the log's own record of the ask cannot be
	// what the gateway wrote ("" when nothing is found): a call with
	// nothing redacted whose digest is not the digest of its logged
	// arguments, so what a human would read is not what they would sign.
	Inconsistent string
}

// Signable refuses an ask a human should not sign as shown: one the log
// does not hold, one whose logged record is inconsistent, and one whose
// ask in the state database disagrees with the log (the log, or the
// database, was edited by someone other than the gateway).
func (r Recorded) Signable() error {
	switch {
	case !r.Found:
		return errors.New("the audit log holds no such ask: the state database's ask was not recorded by the gateway")
	case r.Inconsistent != "":
		return fmt.Errorf("the audit log's record of the ask is inconsistent (%s): the log was rewritten", r.Inconsistent)
	case r.Differs != "":
		return fmt.Errorf("the state database disagrees with the audit log (%s): one of them was edited by someone other than the gateway", r.Differs)
	}
	return nil
}

// FromLog finds each pending ask in the audit log. An ask the log does not
// hold is returned with Found false: nothing the gateway asked.
func FromLog(log io.Reader, pending []Pending) (map[string]Recorded, error) {
	out, _, err := AsksAndUses(log, pending, nil)
	return out, err
}

// GrantUses finds, in the audit log, the calls each grant of ids allowed:
// the session and call ("SESSION/CALL") of the first, by grant id. Only
// call records that name a grant are decoded; one that does not decode
// is an error, since it might be a use.
func GrantUses(log io.Reader, ids map[string]bool) (map[string]string, error) {
	_, used, err := AsksAndUses(log, nil, ids)
	return used, err
}

// AsksAndUses is FromLog and GrantUses in one read of the log.
func AsksAndUses(log io.Reader, pending []Pending, ids map[string]bool) (map[string]Recorded, map[string]string, error) {
	want := map[string]map[string]int{} // session -> call -> pending index
	for i, p := range pending {
		if p.Kind == "" {
			if want[p.Session] == nil {
				want[p.Session] = map[string]int{}
			}
			want[p.Session][p.Call] = i
		}
	}
	sessions := map[string]*logSession{}
	ended := map[string]bool{}
	out, used := map[string]Recorded{}, map[string]string{}
	var useErr error
	err := audit.Scan(log, func(h audit.RecordHead, decode func() (*audit.Event, error)) {
		s := sessions[h.Session]
		if h.Kind == "end" {
			// Ended, whatever its body says: verify ends a session on it too.
			ended[h.Session] = true
			return
		}
		var asked, mayUse bool
		if h.Kind == "call" {
			_, asked = want[h.Session][audit.CallID(h.Body)]
			asked = asked && s != nil
			mayUse = len(ids) > 0 && bytes.Contains(h.Body, []byte(`"grant":`))
			if !asked && !mayUse {
				return // neither a pending ask's nor a use: not worth decoding
			}
		}
		ev, err := decode()
		if err != nil {
			if mayUse && useErr == nil {
				useErr = err
			}
			return // a record the gateway did not write: verify reports it
		}
		switch {
		case ev.Start != nil:
			b := ev.Start.Body
			s = &logSession{server: b.Server, principal: b.Principal.Subject, approvers: b.Approvers, tools: map[string]string{}, at: map[string]time.Time{}}
			for _, t := range b.Tools {
				s.tools[t.Name] = t.Digest
				s.at[t.Name] = ev.At
			}
			sessions[h.Session] = s
		case ev.Tools != nil && s != nil:
			for _, t := range ev.Tools.Tools {
				if s.tools[t.Name] != t.Digest {
					s.at[t.Name] = ev.At
				}
				s.tools[t.Name] = t.Digest
			}
		case ev.Call != nil && ev.Call.Body != nil:
			d := ev.Call.Body.Decision
			if g := d.Grant; mayUse && ids[g] && d.Verdict == string(engine.Allow) && used[g] == "" {
				used[g] = h.Session + "/" + ev.Call.Body.Call
			}
			if i, ok := want[h.Session][ev.Call.Body.Call]; asked && ok && ev.Call.Recorded.Verdict == engine.Ask {
				out[pending[i].ID] = recordedAsk(pending[i], ev, s)
			}
		}
	})
	if err != nil {
		return nil, nil, fmt.Errorf("the audit log does not verify: %v", err)
	}
	recordedDefinitions(pending, sessions, out)
	for id, r := range out {
		r.Ended = ended[r.Approval.Session]
		out[id] = r
	}
	return out, used, useErr
}

// logSession is what FromLog keeps of a session while reading its log.
type logSession struct {
	server, principal string
	approvers         []string
	tools             map[string]string // name -> digest, as last listed
	at                map[string]time.Time
}

// recordedAsk is pending ask p as the log's call record rec (body b) of
// session s records it, with what the state database says otherwise.
func recordedAsk(p Pending, ev *audit.Event, s *logSession) Recorded {
	b := ev.Call.Body
	r := Recorded{Found: true, Args: b.Args, Redacted: b.Redacted, Verdict: b.Verdict, Reason: b.Reason, Asked: ev.At,
		Principal: s.principal, Approvers: s.approvers,
		Approval: audit.Approval{ID: p.ID, Kind: audit.ApproveCall, Session: ev.Session, ToolRef: engine.ToolRef{Server: orServer(b.Server, s.server), Tool: b.Tool}, Digest: b.Digest}}
	var diff []string
	if p.Server != r.Approval.Server {
		diff = append(diff, "server")
	}
	if p.Tool != b.Tool {
		diff = append(diff, "tool")
	}
	if p.Digest != b.Digest {
		diff = append(diff, "digest")
	}
	if !sameJSON(p.Args, b.Args) {
		diff = append(diff, "arguments")
	}
	r.Differs = strings.Join(diff, ", ")
	// With nothing redacted, the digest is SHA-256 of the logged
	// arguments (verify checks the same): one that is not was
	// rewritten, and the human would approve other arguments
	// than the ones shown. A redacted call's digest is keyed by
	// the gateway's secret and cannot be checked here.
	if len(b.Redacted) == 0 && engine.ArgsDigest(b.Args) != b.Digest {
		r.Inconsistent = "its digest " + b.Digest + " is not the digest of its logged arguments"
	}
	return r
}

// recordedDefinitions adds the pending acceptances of changed definitions,
// as the sessions last listed them.
func recordedDefinitions(pending []Pending, sessions map[string]*logSession, out map[string]Recorded) {
	for _, p := range pending {
		s := sessions[p.Session]
		if p.Kind != "definition" || s == nil {
			continue
		}
		name := engine.ToolRef{Server: p.Server, Tool: p.Tool}.In(s.server)
		digest, ok := s.tools[name]
		if !ok || digest == "" {
			continue
		}
		r := Recorded{Found: true, Asked: s.at[name], Principal: s.principal, Approvers: s.approvers,
			Reason:   "the tool's definition changed since the session pinned it",
			Approval: audit.Approval{ID: p.ID, Kind: audit.ApproveDefinition, Session: p.Session, ToolRef: engine.ToolRef{Server: s.server, Tool: name}, Digest: digest}}
		if p.Digest != digest {
			r.Differs = "digest"
		}
		out[p.ID] = r
	}
}

func orServer(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// sameJSON compares two argument objects as JSON values (the state database
// is decoded with float numbers, the log with json.Number).
func sameJSON(a, b map[string]any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	if err1 != nil || err2 != nil {
		return false
	}
	var u, v any
	if json.Unmarshal(x, &u) != nil || json.Unmarshal(y, &v) != nil {
		return false
	}
	return reflect.DeepEqual(u, v)
}
