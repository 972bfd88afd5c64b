package audit

import (
	"errors"
	"fmt"
	"time"

	"bailiff/chain"
	"bailiff/engine"
)

// ErrNoStep is a record that is no step of a session: a checkpoint, or a
// request that never became a call.
var ErrNoStep = errors.New("the record is no step of a session")

// own is the event with its step and body copied out of a decoder's
// storage, holding nothing else of it.
func (ev *Event) own() Event {
	e := *ev
	switch {
	case e.Start != nil:
		st, b := *e.Start, *e.Start.Body
		st.Body, e.Start = &b, &st
	case e.Call != nil:
		cs, b := *e.Call, *e.Call.Body
		cs.Body, e.Call = &b, &cs
		if cs.Recorded != nil {
			d := *cs.Recorded
			cs.Recorded = &d
		}
	case e.Grant != nil:
		gs, b := *e.Grant, *e.Grant.Body
		gs.Body, e.Grant = &b, &gs
		if gs.Recorded != nil {
			d := *gs.Recorded
			gs.Recorded = &d
		}
	case e.Result != nil:
		rs, b := *e.Result, *e.Result.Body
		rs.Body, e.Result = &b, &rs
	case e.Tools != nil:
		b := *e.Tools
		e.Tools = &b
	case e.End != nil:
		b := *e.End
		e.End = &b
	}
	return e
}

// Decoder reads records with its storage kept from one record to the
// next: the event it returns, with its step and body, is valid only until
// the next record is decoded. A reader that takes each step before
// reading the next (verify) allocates no event per record; one that keeps
// events (a session's, to compare it later) copies each out (own), which
// costs the step and body alone, not a decoder per record.
type Decoder struct {
	ev       Event
	start    StartStep
	session  SessionBody
	call     CallStep
	callBody CallBody
	grant    GrantStep
	granted  GrantBody
	result   ResultStep
	resBody  ResultBody
	tools    ToolsBody
	end      EndBody
	recorded engine.Decision
}

// Decode is the one reading of an audit log's record as a step of its
// session: verify, shadow, the summary and the gateway's own read-back
// all take records through it. A step's Body is the record's body as
// read. A call carries its recorded decision, and a grant, read back,
// is bound to what its record names (a tampered record does not inherit
// its call's binding). A result's output is left to the reader, which
// decides how its evidence is loaded; a record that fails a check after
// its body was read still carries its step, with the error; so does one
// whose body cannot be read, empty, so that the record is known to be of
// its kind and its session. The event is in the decoder's storage, good
// until the next Decode.
func (dec *Decoder) Decode(rec chain.Record) (*Event, error) {
	e := &dec.ev
	*e = Event{At: rec.TS, Pos: int(rec.Seq), Session: rec.Session}
	switch rec.Kind {
	case chain.KindSession:
		b := &dec.session
		*b = SessionBody{}
		dec.start = StartStep{ID: rec.Session, Body: b}
		e.Start = &dec.start
		return e, chain.DecodeBody(rec.Body, b)
	case chain.KindTools:
		b := &dec.tools
		*b = ToolsBody{}
		e.Tools = b
		return e, chain.DecodeBody(rec.Body, b)
	case chain.KindCall:
		return e, dec.decodeCall(rec)
	case chain.KindGrant:
		return e, dec.decodeGrant(rec)
	case chain.KindResult:
		b := &dec.resBody
		*b = ResultBody{}
		dec.result = ResultStep{Body: b}
		e.Result = &dec.result
		if err := chain.DecodeBody(rec.Body, b); err != nil {
			return e, err
		}
		switch b.Status {
		case StatusOK, StatusError, StatusFailed:
		default:
			return e, fmt.Errorf("status %q is not ok, error or failed", b.Status)
		}
		return e, checkChannel(*b)
	case chain.KindEnd:
		b := &dec.end
		*b = EndBody{}
		e.End = b
		return e, chain.DecodeBody(rec.Body, b)
	}
	return e, ErrNoStep
}

func (dec *Decoder) decodeCall(rec chain.Record) error {
	b := &dec.callBody
	*b = CallBody{}
	dec.call = CallStep{Body: b}
	dec.ev.Call = &dec.call
	if err := chain.DecodeBody(rec.Body, b); err != nil {
		return err
	}
	if b.Args == nil {
		return errors.New(`"args" must be an object`)
	}
	// The call is kept by the session: it is the one thing not reused.
	c := &engine.Call{ID: b.Call, ToolRef: engine.ToolRef{Server: b.Server, Tool: b.Tool}, Args: b.Args, Digest: b.Digest}
	for _, r := range b.Redacted {
		p, err := engine.ParsePath(r)
		if err != nil {
			return fmt.Errorf("redacted: %v", err)
		}
		c.Redacted = append(c.Redacted, p)
	}
	dec.recorded = toDecision(b.Decision)
	dec.call.Call, dec.call.Recorded = c, &dec.recorded
	return nil
}

func (dec *Decoder) decodeGrant(rec chain.Record) error {
	b := &dec.granted
	*b = GrantBody{}
	dec.grant = GrantStep{Logged: true, Body: b}
	dec.ev.Grant = &dec.grant
	if err := chain.DecodeBody(rec.Body, b); err != nil {
		return err
	}
	exp, err := time.Parse(chain.TimeFormat, b.Expires)
	if err != nil {
		return fmt.Errorf("expires %q is not %s", b.Expires, chain.TimeFormat)
	}
	if b.Answer != "approve" && b.Answer != "decline" {
		return fmt.Errorf("answer %q is not approve or decline", b.Answer)
	}
	dec.grant = GrantStep{Call: b.Call, ID: b.Grant, Approver: b.Approver, Approve: b.Answer == "approve", Expires: exp,
		Logged: true, Tool: engine.ToolRef{Server: b.Server, Tool: b.Tool}, Digest: b.Digest, Body: b}
	if b.From != "" && (b.Decision != nil || b.Signature == nil || b.From == rec.Session) {
		// An approval taken up from another session is signed (it was
		// given out of band) and settles nothing here: the call it
		// answered is that session's.
		return fmt.Errorf("a grant from session %q must be signed, from another session, and settle nothing", b.From)
	}
	if b.Decision != nil {
		dec.recorded = toDecision(*b.Decision)
		dec.grant.Recorded, dec.grant.Settled = &dec.recorded, true
	}
	return nil
}
