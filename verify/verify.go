// Package verify checks an audit log offline: Log reads it once, checks
// its hash chain (and a checkpoint, if given), and, unless integrity only,
// rebuilds every session from its own records and recomputes every
// recorded decision through the engine. What is wrong with the log comes
// back as typed Findings in a Report, in log order; an error is only for
// input that is not a usable log at all.
package verify

import (
	"bailiff/chain"
	"bailiff/engine"
)

// The kinds of finding verify reports.
const (
	FindIntegrity  = "integrity"  // hash, link, seq or a torn line
	FindCheckpoint = "checkpoint" // truncation or rollback against a checkpoint
	FindPolicy     = "policy"     // the embedded policy does not load or match its version
	FindVerdict    = "verdict"    // a recorded decision the engine does not recompute
	FindGrant      = "grant"      // a grant that does not answer what it claims
	FindRecord     = "record"     // a record that cannot be read or does not fit its session
	FindEvidence   = "evidence"   // evidence that is missing (not purged) or altered
	// WarnTime is a warning, not a finding: a record earlier than the one
	// before it. One writer appends in order, so its clock went back (a
	// host's clock set back, or records written elsewhere and spliced in
	// with their hashes redone); the chain itself is intact.
	WarnTime = "time"
	// WarnNoStore is a warning about a whole log (seq 0): its results
	// refer to stored content and its evidence store does not exist, so
	// every output counts as purged.
	WarnNoStore = "evidence-store"
)

// Finding is one disagreement between a log and what it should be.
type Finding struct {
	File       string `json:"file"`
	Seq        int64  `json:"seq"`
	Session    string `json:"session"`
	Call       string `json:"call"`
	Kind       string `json:"kind"`
	Recorded   string `json:"recorded"`
	Recomputed string `json:"recomputed"`
	Reason     string `json:"reason"`
	// Torn marks an integrity finding that is a partial last line.
	Torn bool `json:"-"`
}

// Unevaluable is a recorded decision that cannot be recomputed because it
// depended on input that was redacted or purged. It is not a failure.
type Unevaluable struct {
	File     string `json:"file"`
	Seq      int64  `json:"seq"`
	Session  string `json:"session"`
	Call     string `json:"call"`
	Tool     string `json:"tool"`
	Recorded string `json:"recorded"`
	Reason   string `json:"reason"`
}

// Report is what verify found in one log.
type Report struct {
	File    string
	Records int64
	// Root is the Merkle root of the records read: what a second read of
	// the log must find to be reading the log that was verified.
	Root     chain.Hash
	Sessions int
	Calls    int
	// Contents counts the result records that refer to stored content
	// (semantics only): a log with none needs no evidence store.
	Contents    int
	Checked     bool // semantics were checked (not integrity only)
	Checkpoint  *chain.Checkpoint
	Findings    []Finding
	Unevaluable []Unevaluable
	// Warnings are reported without failing the log: timestamps that go
	// back (WarnTime).
	Warnings []Finding
}

// Options tunes Log.
type Options struct {
	// Checkpoint, when set, is a verified checkpoint of this log kept
	// elsewhere: a log shorter than it was truncated, and one whose first
	// records do not have its root was rewritten.
	Checkpoint *chain.Checkpoint
	// IntegrityOnly skips the semantic check.
	IntegrityOnly bool
	// Workers bounds the sessions verified at once (default GOMAXPROCS).
	Workers int
	// Key, when set, is the public key in-log checkpoint records must be
	// signed with.
	Key string
	// ApproverKeys, when set, are the only approver keys verify trusts: a
	// session record that trusts another (as a rewritten log could, to
	// sign its own grants) is a finding, and that key approves nothing.
	ApproverKeys []string
	// Follow, when set, opens a follower for each session, told the
	// session's history as it is verified.
	Follow FollowFunc
	// Ordered says which sessions, by their policy, count across
	// sessions and must be taken in time order on one ledger; nil is the
	// policies with tenant budgets or rates. Shadow widens it to the
	// sessions whose candidate counts.
	Ordered func(*engine.Policy) bool
}
