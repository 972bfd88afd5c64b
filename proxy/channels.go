package proxy

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"bailiff/audit"
	"bailiff/engine"
)

// Every channel by which a server's text reaches the client taints, not
// only tools/call results: what a resource, a prompt, a log message, a
// sampling or elicitation request or a JSON-RPC error says can carry an
// attacker's address as well as a tool result can. Each such text is
// stored as evidence and written as a result record naming its channel
// (the method that carried it) before it is relayed, so no call the
// client makes after seeing it is decided without it, and verify feeds
// it to the state in the same order.

// early is channel output that arrived before the session record: it is
// recorded and fed to the state right after the session starts, before
// any call is decided (calls wait for the session).
type early struct {
	server, channel, status string
	digest                  string
	size                    int64
	text                    string
}

// relaying notes the method of a client request relayed to the server, so
// the server's answer can be recorded under it. tools/call and tools/list
// are handled on their own.
func (p *Proxy) relaying(u *upstream, m *jsonrpc.Request) {
	if !m.ID.IsValid() || m.Method == "tools/call" || m.Method == "tools/list" {
		return
	}
	p.mu.Lock()
	if u.relayed == nil {
		u.relayed = map[string]string{}
	}
	u.relayed[key(m.ID)] = m.Method
	p.mu.Unlock()
}

// fromServerResponse records the text of a server's answer to a relayed
// client request (its result, or its error) before it is relayed. isList
// marks the answer to a client's tools/list: its tools are pinned, not
// tainted, but an error it carries is text like any other.
func (p *Proxy) fromServerResponse(u *upstream, m *jsonrpc.Response, isList bool) {
	p.mu.Lock()
	method, ok := u.relayed[key(m.ID)]
	delete(u.relayed, key(m.ID))
	p.mu.Unlock()
	if isList {
		method, ok = "tools/list", true
	}
	if !ok {
		return
	}
	if m.Error != nil {
		p.observe(u, method, audit.StatusFailed, errorOutput(m.Error))
		return
	}
	if isList {
		return
	}
	p.observe(u, method, audit.StatusOK, payload(m.Result))
}

// payload is the evidence of a relayed result or params. What
// the exact decoder refuses (a key given twice, say) is still relayed, so
// it still taints: as its raw bytes and as a lenient decoder reads it, the
// values a client keeping the first key or the last would see.
func payload(raw []byte) []byte {
	if v, err := engine.DecodeJSON(raw); err == nil {
		return engine.OutputJSON("", nil, v)
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		v = nil
	}
	return engine.OutputJSON(string(raw), nil, v)
}

// fromServerRequest records the text of a request or notification the
// server sends the client (sampling, elicitation, logging, progress, …)
// before it is relayed. A gateway refuses the server's requests, so their
// text reaches nobody and is not recorded; its notifications are relayed
// and are.
func (p *Proxy) fromServerRequest(u *upstream, m *jsonrpc.Request) {
	if p.gateway && m.Method == "notifications/tools/list_changed" {
		return
	}
	if len(m.Params) == 0 {
		return
	}
	ev := payload(m.Params)
	v, _ := engine.DecodeJSON(m.Params)
	if params, ok := v.(map[string]any); ok && m.Method == "notifications/message" {
		// A key named "data" is skipped as binary content when output is
		// read, and a log message's payload is its "data": the evidence
		// is the logger as text and the payload as structured content.
		logger, _ := params["logger"].(string)
		ev = engine.OutputJSON(logger, nil, params["data"])
	}
	p.observe(u, m.Method, audit.StatusOK, ev)
}

// errorOutput is the evidence of a JSON-RPC error: its message as text,
// and its data as structured content.
func errorOutput(err error) []byte {
	msg := err.Error()
	var data any
	if e, ok := err.(*jsonrpc.Error); ok {
		msg = e.Message
		if len(e.Data) > 0 {
			if v, err := engine.DecodeJSON(e.Data); err == nil {
				data = v
			} else {
				data = string(e.Data)
			}
		}
	}
	return engine.OutputJSON(msg, nil, data)
}

// observe stores one channel's output as evidence, writes its result
// record and adds it to the session's taint; before the session starts
// it is kept for flushEarly. Output with no text taints nothing and is
// not recorded.
func (p *Proxy) observe(u *upstream, channel, status string, evidence []byte) {
	// The text is read back from the evidence, exactly as verify reads
	// it, so the live state and the recomputed one cannot differ.
	text, err := engine.OutputFromJSON(evidence)
	if err != nil {
		p.logf("cannot read back the evidence of %s: %v", channel, err)
		text = string(evidence)
	}
	if text == "" {
		return
	}
	digest, err := p.opt.Evidence.Put(evidence, p.opt.EvidenceSync)
	if err != nil {
		// As for a tool result: the digest is still recorded, and verify
		// reports the decisions that needed this text as unevaluable.
		p.logf("cannot store evidence: %v", err)
		digest = audit.ContentDigest(evidence)
	}
	e := early{server: u.name, channel: channel, status: status, digest: digest, size: int64(len(evidence)), text: text}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		// The session is ending: no call will be decided after this, and
		// nothing may follow its end record.
		return
	}
	if p.sess == nil {
		select {
		case <-p.pinned:
			// The session never started: no call will be decided.
		default:
			p.early = append(p.early, e)
		}
		return
	}
	p.output(e)
}

// flushEarly records the output that came before the session record.
// Called with p.mu held, right after the session starts.
func (p *Proxy) flushEarly() {
	for _, e := range p.early {
		p.output(e)
	}
	p.early = nil
}

// output writes one channel output's record and taints with it. Called
// with p.mu held, so records and the state see outputs in one order.
func (p *Proxy) output(e early) {
	body := &audit.ResultBody{ToolRef: engine.ToolRef{Server: e.server, Tool: e.channel}, Channel: e.channel, Status: e.status, Content: e.digest, Size: e.size}
	if err := p.step(audit.Event{Result: &audit.ResultStep{Body: body, Out: &audit.Output{Text: e.text}}}); err != nil {
		p.logf("cannot write the audit log: %v", err)
	}
}
