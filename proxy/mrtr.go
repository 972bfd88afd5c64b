package proxy

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"bailiff/engine"
)

// Revision 2026-07-28 forbids the server's own requests to the client,
// so an ask cannot go out as elicitation/create. It goes out as the
// call's result instead: input_required, with one elicitation in
// inputRequests and a requestState the client must echo when it retries
// the same tools/call with its inputResponses (SEP-2322, the Go SDK's
// multi-round trip). The retry is no new call: it settles the asked one,
// with the same grant record an elicitation/create answer gets, so the
// log has one shape whichever way the human was asked.
//
// The state round-trips through the client, which is the party a gateway
// does not trust: it is authenticated (HMAC-SHA256 under a secret of
// this process), bound to the ask (session, server, tool, argument
// digest, call), short-lived and single use. The proxy also keeps the
// ask itself in memory, keyed by the state's nonce: the state names an
// ask, it never carries the decision.

const (
	// stateInput is the id of bailiff's one input request.
	stateInput = "bailiff-approve"
	// stateContext separates this MAC from any other use of the secret.
	stateContext = "bailiff requestState v1\n"
	// maxState bounds what is parsed: a real state is a few hundred bytes.
	maxState = 4096
)

// askState is what a requestState says, once authenticated.
type askState struct {
	V       int    `json:"v"`
	Session string `json:"session"`
	engine.ToolRef
	Call    string `json:"call"`
	Digest  string `json:"digest"`
	Expires int64  `json:"exp"` // unix seconds
	Nonce   string `json:"nonce"`
}

// pendingAsk is an ask put to the client as input_required, waiting
// for its retry.
type pendingAsk struct {
	call    *engine.Call
	asked   engine.Decision
	expires int64 // unix seconds, as the state says
}

// stateError says why a requestState approves nothing. Kind is one of
// forged, altered, replayed, expired.
type stateError struct {
	Kind, Why string
}

func (e *stateError) Error() string { return "requestState " + e.Kind + ": " + e.Why }

func newStateSecret() []byte {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		// No secret, no state: every state would verify under a known key.
		panic("bailiff: no randomness for the requestState secret: " + err.Error())
	}
	return b
}

func stateMAC(secret, payload []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(stateContext))
	m.Write(payload)
	return m.Sum(nil)
}

// sealState encodes s as payload.mac, both base64url without padding.
func sealState(secret []byte, s askState) string {
	payload, _ := json.Marshal(s)
	return base64.RawURLEncoding.EncodeToString(payload) + "." + base64.RawURLEncoding.EncodeToString(stateMAC(secret, payload))
}

// openState authenticates a requestState and reads it. Nothing of the
// payload is looked at before its MAC verifies (in constant time).
func openState(secret []byte, raw string) (askState, error) {
	var s askState
	forged := func(why string) (askState, error) { return askState{}, &stateError{Kind: "forged", Why: why} }
	if len(raw) > maxState {
		return forged("longer than any state bailiff issues")
	}
	enc, encMAC, ok := strings.Cut(raw, ".")
	if !ok || strings.Contains(encMAC, ".") {
		return forged("not a state bailiff issued")
	}
	payload, err1 := base64.RawURLEncoding.Strict().DecodeString(enc)
	mac, err2 := base64.RawURLEncoding.Strict().DecodeString(encMAC)
	if err1 != nil || err2 != nil || len(mac) != sha256.Size {
		return forged("not a state bailiff issued")
	}
	if !hmac.Equal(mac, stateMAC(secret, payload)) {
		return forged("its MAC does not verify: not issued by this gateway process, or edited")
	}
	d := json.NewDecoder(strings.NewReader(string(payload)))
	d.DisallowUnknownFields()
	if err := d.Decode(&s); err != nil || d.More() || s.V != 1 || s.Nonce == "" || s.Call == "" {
		// Authentic but unreadable: only a bug of bailiff's makes one.
		return forged("its payload cannot be read")
	}
	return s, nil
}

// issueState makes the state for an ask of call c and keeps the ask.
func (p *Proxy) issueState(c *engine.Call, asked engine.Decision) string {
	var n [16]byte
	if _, err := rand.Read(n[:]); err != nil {
		panic("bailiff: no randomness for a requestState nonce: " + err.Error())
	}
	s := askState{V: 1, Session: p.opt.Session, ToolRef: c.ToolRef, Call: c.ID, Digest: c.Digest,
		Expires: p.opt.Now().Add(p.opt.AskTimeout).Unix(), Nonce: hex.EncodeToString(n[:])}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.asks == nil {
		p.asks = map[string]pendingAsk{}
		p.usedNonces = map[string]int64{}
	}
	// Asks never retried, and nonces whose states expired, are dropped:
	// an expired state is refused by its expiry, so nothing needs them,
	// and a client that asks without end must not grow the gateway.
	now := p.opt.Now().Unix()
	for n, a := range p.asks {
		if a.expires <= now {
			delete(p.asks, n)
		}
	}
	for n, exp := range p.usedNonces {
		if exp <= now {
			delete(p.usedNonces, n)
		}
	}
	p.asks[s.Nonce] = pendingAsk{call: c, asked: asked, expires: s.Expires}
	return sealState(p.stateSecret, s)
}

// takeState checks a retry's requestState against the call it came with
// (c: server, tool and digest computed as decide computes them) and
// returns the ask it settles. Whatever the outcome, an authentic state's
// nonce is spent: a state is tried once.
func (p *Proxy) takeState(raw any, c *engine.Call) (pendingAsk, error) {
	str, ok := raw.(string)
	if !ok {
		return pendingAsk{}, &stateError{Kind: "forged", Why: "not a string"}
	}
	s, err := openState(p.stateSecret, str)
	if err != nil {
		return pendingAsk{}, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, used := p.usedNonces[s.Nonce]; used {
		return pendingAsk{}, &stateError{Kind: "replayed", Why: "it was already used: a state answers one ask, once"}
	}
	pend, known := p.asks[s.Nonce]
	delete(p.asks, s.Nonce)
	if p.usedNonces == nil {
		p.usedNonces = map[string]int64{}
	}
	p.usedNonces[s.Nonce] = s.Expires
	// Expiry first: an expired state's ask and nonce may have been
	// dropped already, and it is refused as what it is.
	if !p.opt.Now().Before(time.Unix(s.Expires, 0)) {
		return pendingAsk{}, &stateError{Kind: "expired", Why: "the ask it answers expired at " + time.Unix(s.Expires, 0).UTC().Format(time.RFC3339)}
	}
	switch {
	case !known:
		return pendingAsk{}, &stateError{Kind: "forged", Why: "no ask of this session was given it"}
	case s.Session != p.opt.Session || pend.call.ID != s.Call:
		return pendingAsk{}, &stateError{Kind: "altered", Why: "it was issued in another session"}
	case s.Server != c.Server || s.Tool != c.Tool || s.Digest != c.Digest ||
		pend.call.Server != c.Server || pend.call.Tool != c.Tool || pend.call.Digest != c.Digest:
		return pendingAsk{}, &stateError{Kind: "altered", Why: fmt.Sprintf("it was issued for call %s (%s %s), not for this tool and these arguments", s.Call, s.Tool, s.Digest)}
	case !p.opt.Now().Before(time.Unix(s.Expires, 0)):
		return pendingAsk{}, &stateError{Kind: "expired", Why: "the ask it answers expired at " + time.Unix(s.Expires, 0).UTC().Format(time.RFC3339)}
	}
	return pend, nil
}

// retryParams reads what a multi-round-trip retry adds to tools/call:
// the state, if any was sent (present even when it is not a string), and
// the client's answers.
func retryParams(raw json.RawMessage) (state any, present bool, responses map[string]any) {
	v, err := engine.DecodeJSON(raw)
	m, ok := v.(map[string]any)
	if err != nil || !ok {
		return nil, false, nil
	}
	state, present = m["requestState"]
	responses, _ = m["inputResponses"].(map[string]any)
	return state, present, responses
}

// approved reads the human's answer from the retry's inputResponses:
// only an accepted elicitation with approve true approves.
func approved(responses map[string]any) bool {
	r, _ := responses[stateInput].(map[string]any)
	content, _ := r["content"].(map[string]any)
	action, _ := r["action"].(string)
	yes, _ := elicitAnswer(action, content)
	return yes
}

// approvalQuestion is the elicitation an ask puts to the human, in band.
func approvalQuestion(c *engine.Call, asked engine.Decision) map[string]any {
	args, _ := json.Marshal(c.Args)
	msg := fmt.Sprintf("bailiff: the agent wants to call %q on %s with %s (arguments %s).\n%s\nApprove this one call?",
		c.Tool, c.Server, args, c.Digest, asked.Reason)
	return map[string]any{
		"message": msg,
		"requestedSchema": map[string]any{
			"type": "object",
			"properties": map[string]any{
				"approve": map[string]any{"type": "boolean", "title": "Approve", "description": "Allow this call once"},
			},
			"required": []string{"approve"},
		},
	}
}

// askInBand answers an asked call of a stateless session with
// input_required: the question, and the state to retry with.
func (p *Proxy) askInBand(id jsonrpc.ID, c *engine.Call, asked engine.Decision) {
	res, err := json.Marshal(map[string]any{
		"resultType": "input_required",
		"inputRequests": map[string]any{
			stateInput: map[string]any{"method": "elicitation/create", "params": approvalQuestion(c, asked)},
		},
		"requestState": p.issueState(c, asked),
	})
	if err != nil {
		panic(err)
	}
	p.toClient(&jsonrpc.Response{ID: id, Result: res})
}
