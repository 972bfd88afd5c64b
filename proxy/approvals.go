package proxy

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"bailiff/audit"
	"bailiff/engine"
	"bailiff/internal/jsontext"
	"bailiff/state"
)

// Approvals is where asks that no human could answer wait for one: the
// state database (package state), which the gateway and `bailiff
// approve`, `decline` and `approvals` share. The gateway records pending
// asks and reads answers; approve and decline record answers. Only the
// gateway writes the log: an answer becomes a grant record when the
// gateway takes it, and binds to the exact call (tool and argument
// digest) it was given for, for one retry.
//
// Nothing in the database is trusted. An answer counts only when it is
// signed by an approver key the gateway was configured with, over the
// ask as the gateway itself recorded it (audit.Approval); a pending ask
// is a notice for the human, and `bailiff approvals` shows the call from
// the audit log, not from the database.
type Approvals struct {
	Store *state.Store
	// Log is the audit log the asks are recorded in (absolute): what
	// approve reads an ask from.
	Log string
	// StateArg is the --state argument that names Store on approve's
	// command line; "" when it is the default database.
	StateArg string

	// spent are the grants this process spent, by id, whatever the
	// database says afterwards: a grant reset to unused in the file while
	// the gateway runs is not spent again by any of its sessions.
	mu    sync.Mutex
	spent map[string]string
}

// approveCommand is the command line that answers approval id (the
// database's path absolute and shell-quoted when it is not the
// default): a human copies it from the agent's chat, from whatever
// directory they are in.
//
// A PostgreSQL database is not named: its URL (host, port, user,
// database) is the operator's, not the agent's to read. The human gives
// the one the gateway's banner names.
func (a *Approvals) approveCommand(id string) string {
	cmd := "bailiff approve " + id
	switch {
	case a.Store != nil && a.Store.Postgres():
		cmd += " --state URL (the gateway's PostgreSQL state database, as its start-up line names it)"
	case a.StateArg != "":
		cmd += " --state " + shellQuote(a.StateArg)
	}
	return cmd
}

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./-+=:@,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Pending is an ask waiting for a human.
type Pending struct {
	ID string `json:"id"`
	// Kind is "" for a call waiting for approval, "definition" for a
	// changed tool definition waiting to be accepted (Digest is the new
	// definition's).
	Kind      string `json:"kind,omitempty"`
	Session   string `json:"session"`
	Principal string `json:"principal,omitempty"`
	// Log is the audit log that records the ask.
	Log    string         `json:"log,omitempty"`
	Server string         `json:"server"`
	Call   string         `json:"call"`
	Tool   string         `json:"tool"`
	Args   map[string]any `json:"args"`
	Digest string         `json:"digest"`
	Reason string         `json:"reason"`
	Asked  string         `json:"asked"`
}

// AnswerFile is a human's signed answer to a pending ask.
type AnswerFile struct {
	ID     string `json:"id"`
	Answer string `json:"answer"` // approve or decline
	// Approver is the signing key's name, for whoever reads the file; the
	// proxy takes the name from the key, never from here.
	Approver  string          `json:"approver"`
	Signature audit.Signature `json:"signature"`
}

func validID(id string) error {
	if id == "" || strings.ContainsAny(id, `/\`) || strings.HasPrefix(id, ".") {
		return fmt.Errorf("%q is not an approval id", id)
	}
	return nil
}

// Ask records a pending ask.
func (a *Approvals) Ask(p Pending) error {
	if err := validID(p.ID); err != nil {
		return err
	}
	args, err := json.Marshal(p.Args)
	if err != nil {
		return err
	}
	kind := p.Kind
	if kind == "" {
		kind = audit.ApproveCall
	}
	asked, err := audit.ParseTime(p.Asked)
	if err != nil {
		return err
	}
	return a.Store.AddAsk(state.Ask{ID: p.ID, Kind: kind, Log: a.Log, Session: p.Session, Server: p.Server, Tool: p.Tool,
		Call: p.Call, Digest: p.Digest, Principal: p.Principal, Args: string(args), Reason: p.Reason, Asked: asked})
}

// List returns the pending asks of the log, oldest first.
func (a *Approvals) List() ([]Pending, error) {
	asks, err := a.Store.Pending(a.Log)
	if err != nil {
		return nil, err
	}
	return pendingOf(asks)
}

// pendingOf turns the database's asks into the gateway's.
func pendingOf(asks []state.Ask) ([]Pending, error) {
	out := make([]Pending, 0, len(asks))
	for _, s := range asks {
		p := Pending{ID: s.ID, Log: s.Log, Session: s.Session, Principal: s.Principal, Server: s.Server, Call: s.Call, Tool: s.Tool,
			Digest: s.Digest, Reason: s.Reason, Asked: audit.FormatTime(s.Asked)}
		if s.Kind != audit.ApproveCall {
			p.Kind = s.Kind
		}
		// A key given twice would show one value here and another to
		// a reader of the database: refused, as the log's records are.
		if err := jsontext.NoDuplicateKeys([]byte(s.Args)); err != nil {
			return nil, fmt.Errorf("ask %s: its arguments: %v", s.ID, err)
		}
		if err := json.Unmarshal([]byte(s.Args), &p.Args); err != nil {
			return nil, fmt.Errorf("ask %s: its arguments are not JSON: %v", s.ID, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// Decide answers a pending ask: it signs ap (the ask as the audit log
// records it, with the answer and the time) with the approver's private
// key skey and records the answer. It refuses an id that is not pending,
// and a second answer. It returns the approver's name, the key's.
func (a *Approvals) Decide(ap audit.Approval, skey string) (string, error) {
	if err := validID(ap.ID); err != nil {
		return "", err
	}
	if ap.Answer != "approve" && ap.Answer != "decline" {
		return "", fmt.Errorf("answer %q is not approve or decline", ap.Answer)
	}
	sig, err := audit.SignApproval(ap, skey)
	if err != nil {
		return "", err
	}
	name := audit.ApproverName(skey)
	return name, a.Store.AddAnswer(ap.ID, state.Answer{Answer: ap.Answer, Approver: name, Key: sig.Key, Sig: sig.Sig,
		Signed: sig.Time, Given: time.Now()})
}

// Answer returns the answer given to a pending ask, if any. It is not
// checked here: see Proxy.takeAnswer. A database that cannot be read
// answers nothing (the ask stays pending): the error is returned for
// the gateway's stderr.
func (a *Approvals) Answer(id string) (AnswerFile, bool, error) {
	ans, ok, err := a.Store.GetAnswer(id)
	if err != nil || !ok {
		return AnswerFile{}, false, err
	}
	return AnswerFile{ID: id, Answer: ans.Answer, Approver: ans.Approver,
		Signature: audit.Signature{Key: ans.Key, Sig: ans.Sig, Time: ans.Signed}}, true, nil
}

// Reject removes an answer the gateway refused, leaving the ask pending
// for a real approver.
func (a *Approvals) Reject(id string) error { return a.Store.RejectAnswer(id) }

// Settle marks an ask's answer taken into the log, with the grant made
// from it (nil for none).
func (a *Approvals) Settle(id string, at time.Time, g *engine.Grant, principal string) error {
	if g == nil {
		return a.Store.Settle(id, at, nil)
	}
	return a.Store.Settle(id, at, &state.Grant{Server: g.Server, Tool: g.Tool, Digest: g.Digest, Principal: principal,
		Approver: g.Approver, Approve: g.Approve, Expires: g.Expires, Granted: at})
}

// UseGrant spends grant id for the call by, once: a second use, by this
// gateway or another process on the same database, is refused.
func (a *Approvals) UseGrant(id, by string, at time.Time) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if first, ok := a.spent[id]; ok {
		return fmt.Errorf("%w: grant %s was used by %s", errGrantUsed, id, first)
	}
	err := a.Store.UseGrant(id, by, at)
	if err == nil {
		if a.spent == nil {
			a.spent = map[string]string{}
		}
		a.spent[id] = by
	}
	if errors.Is(err, state.ErrUsed) {
		return fmt.Errorf("%w: %v", errGrantUsed, err)
	}
	return err
}

var errGrantUsed = errors.New("the approval was already used")

// Carryable lists the approvals given to asks of other sessions of this
// log for principal that a call of session may take up (see
// Proxy.carryGrants).
func (a *Approvals) Carryable(session, principal string) ([]state.Carry, error) {
	return a.Store.Carryable(a.Log, principal, session)
}

// AnswersVersion changes when an answer may have been given since it was
// last read (state.Store.AnswersVersion).
func (a *Approvals) AnswersVersion() (string, error) { return a.Store.AnswersVersion() }

// SettledElsewhere tells whether ask id was settled already: by another
// session that took its approval up. A database that cannot be read
// says yes: this session does not take the answer (a retry is asked
// again), and a later session may still take it up.
func (a *Approvals) SettledElsewhere(id string) bool {
	ask, found, err := a.Store.GetAsk(id)
	return err != nil || (found && !ask.Settled.IsZero())
}
