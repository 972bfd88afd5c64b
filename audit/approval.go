package audit

import (
	"encoding/json"
	"fmt"
	"slices"

	"bailiff/chain"
	"bailiff/engine"
)

// Approval is what a human approver signs to answer an ask out of band:
// the approval's id, the answer, and the ask it answers as the gateway
// recorded it (session, server, tool, and the digest of the arguments or,
// for a definition, of the new definition), with the time it was signed.
// Every field is in the signed text, so a signature cannot be moved to
// another ask, another answer or another call.
type Approval struct {
	ID      string `json:"id"`
	Kind    string `json:"kind"` // "call" or "definition"
	Session string `json:"session"`
	engine.ToolRef
	Digest string `json:"digest"`
	Answer string `json:"answer"` // approve or decline
	Time   string `json:"time"`   // chain.TimeFormat
}

// ElicitationApprover is the approver of a grant answered in band, through
// the client's elicitation: such a grant is not signed, and no key may
// take its name.
const ElicitationApprover = "elicitation"

// The kinds of ask an approval answers.
const (
	ApproveCall       = "call"
	ApproveDefinition = "definition"
)

// Text is the note text signed: a fixed first line, so an approval
// signature is never a valid checkpoint signature or the reverse, and the
// approval as one JSON line.
func (a Approval) Text() string {
	b, _ := json.Marshal(a)
	return "bailiff approval v1\n" + string(b) + "\n"
}

// Signature is an approver's signature over an Approval, as a grant (or
// an accepting tools record) carries it: the approver's public key in the
// note verifier form (name+hash+key, so the log holds what checks it),
// the base64 signature, and the signed time.
type Signature struct {
	Key  string `json:"key"`
	Sig  string `json:"sig"`
	Time string `json:"time"`
}

// SignApproval signs a with the approver's private key skey (from
// chain.GenerateKey). It returns the signature with the key's public
// half; the approver's name is the key's.
func SignApproval(a Approval, skey string) (Signature, error) {
	vkey, sig, err := chain.SignText(a.Text(), skey)
	if err != nil {
		return Signature{}, err
	}
	return Signature{Key: vkey, Sig: sig, Time: a.Time}, nil
}

// openApproval checks that sig is a signature by sig.Key over a (with
// a.Time taken from the signature), and returns the approver's name.
func openApproval(a Approval, sig Signature) (string, error) {
	a.Time = sig.Time
	return chain.OpenText(a.Text(), sig.Key, sig.Sig)
}

// TrustedApprover checks a signed answer against the approver keys a
// session trusts and its principal: the key must be one of trusted, not
// named for the principal (who may never approve their own agent's
// calls), and the signature must verify over a. It returns the
// approver's name.
func TrustedApprover(a Approval, sig Signature, trusted []string, principal string) (string, error) {
	if !slices.Contains(trusted, sig.Key) {
		name, _ := chain.CheckPublicKey(sig.Key)
		return name, fmt.Errorf("key %q is not one of the session's approver keys", chain.ShortKey(sig.Key))
	}
	name, err := openApproval(a, sig)
	if err != nil {
		return name, err
	}
	if name == ElicitationApprover {
		return name, fmt.Errorf("%q is reserved for answers given through the client", name)
	}
	if name == principal {
		return name, fmt.Errorf("%s is the session's principal, who never approves their own agent's calls", name)
	}
	return name, nil
}
