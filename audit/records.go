package audit

import (
	"bailiff/chain"
	"bailiff/engine"
)

// The bodies of the record kinds. Field names are the JSON keys written;
// omitempty fields are left out when empty. The principal and pinned
// tools are the engine's own types; a decision has a record form of its
// own (Decision), since the engine's carries what is never written and
// names positions, which the log calls seqs.

// SessionBody opens a session. The log is self-contained: the full
// canonical policy text is here, and PolicyVersion is its SHA-256.
type SessionBody struct {
	Server        string           `json:"server"`
	Principal     engine.Principal `json:"principal"`
	PolicyVersion string           `json:"policy_version"`
	Policy        string           `json:"policy"`
	Tools         []engine.ToolDef `json:"tools"`
	Engine        string           `json:"engine"`
	// Approvers are the approver public keys the gateway trusted for this
	// session (note verifier form): what verify checks out-of-band grants
	// against, so the log stays self-contained.
	Approvers []string `json:"approvers,omitempty"`
	// Replica names the gateway process that wrote the session, when
	// several share one state database: each keeps its own log, and
	// verify reads them together.
	Replica string `json:"replica,omitempty"`
}

// ToolsBody is a later tools/list answer (after list_changed). The pins of
// the session record stay; calls are checked against both. With Repin, as
// the live gateway writes it, tools new to the session are pinned too.
//
// Accept, with AcceptedBy, records a human accepting changed definitions:
// those tools are pinned anew, to the digests given, and callable again.
// Such a record repeats the current list in Tools.
type ToolsBody struct {
	Tools      []engine.ToolDef `json:"tools"`
	Repin      bool             `json:"repin,omitempty"`
	Accept     []engine.ToolDef `json:"accept,omitempty"`
	AcceptedBy string           `json:"accepted_by,omitempty"`
	// AcceptID and AcceptSignature are the approval the acceptance answered
	// and the approver's signature over it (see Approval).
	AcceptID        string     `json:"accept_id,omitempty"`
	AcceptSignature *Signature `json:"accept_signature,omitempty"`
}

// MalformedBody is a request that could not be read as a tools/call: only
// its size and digest are kept (its bytes are whatever a client sent).
type MalformedBody struct {
	Call   string `json:"call,omitempty"`
	Size   int    `json:"size"`
	Digest string `json:"digest"`
	Reason string `json:"reason"`
}

// Source names the output that tainted a destination: the seq of its
// result record, the server and the tool.
type Source struct {
	Seq int `json:"seq"`
	engine.ToolRef
}

// Decision is a verdict as recorded.
type Decision struct {
	Verdict     string  `json:"verdict"`
	Check       string  `json:"check"`
	Rule        string  `json:"rule,omitempty"`
	Reason      string  `json:"reason"`
	TaintedBy   *Source `json:"tainted_by,omitempty"`
	Destination string  `json:"destination,omitempty"`
	Grant       string  `json:"grant,omitempty"`
}

// CallBody is a decided tools/call. Args are the arguments after
// redaction; Redacted lists the argument paths removed. Digest binds
// grants to the call: "sha256:<hex>" of the canonical arguments, or, when
// anything was redacted, "hmac-sha256:<hex>" under a deployment secret so
// a redacted value cannot be guessed from it.
type CallBody struct {
	Call string `json:"call"`
	// Server is the server the call went to, in a session that spans
	// several (a gateway's); absent, the session's server.
	Server   string         `json:"server,omitempty"`
	Tool     string         `json:"tool"`
	Args     map[string]any `json:"args"`
	Redacted []string       `json:"redacted,omitempty"`
	// Resolved maps each confined path argument the gateway rewrote
	// (symlinks resolved, before deciding) to the value the client sent.
	// Args hold the resolved value: the one decided on and forwarded.
	Resolved map[string]string `json:"resolved,omitempty"`
	Digest   string            `json:"digest"`
	// Elicit marks an asked call the gateway put to the human through the
	// client (MCP elicitation): only such a call can be settled by an
	// unsigned "elicitation" grant.
	Elicit bool `json:"elicit,omitempty"`
	// Trace is the id of the OpenTelemetry trace the call's span belongs
	// to (32 hex digits), when the gateway traced it: from a log record
	// to the trace, and back. It decides nothing.
	Trace string `json:"trace,omitempty"`
	Decision
}

// GrantBody is a human's answer to an asked call. Decision is set when the
// grant settled the call it answers (the call was waiting for it); a
// grant given for a later identical call has none. Signature is the
// approver's signature over the Approval the grant answers (its id is
// Grant, its kind "call"); only an elicitation grant, answered in band,
// has none.
type GrantBody struct {
	Grant string `json:"grant"`
	Call  string `json:"call"`
	// From is the session the ask was made in, when it is not this one:
	// an approval taken up by a later session of the same log and
	// principal (the earlier one ended, or the gateway restarted). Call
	// is that session's call.
	From      string     `json:"from,omitempty"`
	Server    string     `json:"server,omitempty"` // as in CallBody
	Tool      string     `json:"tool"`
	Digest    string     `json:"digest"`
	Approver  string     `json:"approver"`
	Answer    string     `json:"answer"`
	Expires   string     `json:"expires"`
	Signature *Signature `json:"signature,omitempty"`
	Decision  *Decision  `json:"decision,omitempty"`
}

// The result statuses.
const (
	StatusOK     = "ok"     // the tool answered
	StatusError  = "error"  // the tool answered with isError
	StatusFailed = "failed" // the upstream failed: crash, timeout, protocol error
)

// ResultBody is what came back for a forwarded call (Call set), or output
// the session saw otherwise. Content is the digest of the evidence: the
// result's content, kept beside the log (see Evidence).
//
// Channel, when set, is the MCP method of the message that carried the
// output to the client other than a tools/call result (resources/read,
// prompts/get, notifications/message, sampling/createMessage, …); then
// Call is absent and Tool repeats Channel, which is the provenance
// trusted_sources are matched against. Absent, it is a tools/call result.
type ResultBody struct {
	Call string `json:"call,omitempty"`
	engine.ToolRef
	Channel string `json:"channel,omitempty"`
	Status  string `json:"status"`
	Content string `json:"content,omitempty"`
	Size    int64  `json:"size"`
}

// EndBody closes a session.
type EndBody struct {
	Reason string `json:"reason,omitempty"`
}

// Content is the evidence a record refers to: a result's content digest,
// or "" for any other record (or a result body that does not decode).
func Content(rec chain.Record) string {
	if rec.Kind != chain.KindResult {
		return ""
	}
	var b ResultBody
	if chain.DecodeBody(rec.Body, &b) != nil {
		return ""
	}
	return b.Content
}
