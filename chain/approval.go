package chain

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"golang.org/x/mod/sumdb/note"
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
	Server  string `json:"server"`
	Tool    string `json:"tool"`
	Digest  string `json:"digest"`
	Answer  string `json:"answer"` // approve or decline
	Time    string `json:"time"`   // TimeFormat
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
// GenerateKey). It returns the signature with the key's public half, and
// the approver's name, which is the key's.
func SignApproval(a Approval, skey string) (Signature, error) {
	s, err := note.NewSigner(skey)
	if err != nil {
		return Signature{}, fmt.Errorf("approver key: %v", err)
	}
	vkey, err := PublicKey(skey)
	if err != nil {
		return Signature{}, err
	}
	msg, err := note.Sign(&note.Note{Text: a.Text()}, s)
	if err != nil {
		return Signature{}, err
	}
	// The note ends "\n— <name> <base64>\n": keep the base64.
	line := strings.TrimSuffix(string(msg[len(a.Text())+1:]), "\n")
	sig := line[strings.LastIndexByte(line, ' ')+1:]
	return Signature{Key: vkey, Sig: sig, Time: a.Time}, nil
}

// OpenApproval checks that sig is a signature by sig.Key over a (with
// a.Time taken from the signature), and returns the approver's name.
func OpenApproval(a Approval, sig Signature) (string, error) {
	v, err := note.NewVerifier(sig.Key)
	if err != nil {
		return "", fmt.Errorf("approver public key: %v", err)
	}
	if sig.Sig == "" || strings.ContainsAny(sig.Sig, " \n") {
		return "", errors.New("the signature is empty or malformed")
	}
	a.Time = sig.Time
	msg := a.Text() + "\n— " + v.Name() + " " + sig.Sig + "\n"
	if _, err := note.Open([]byte(msg), note.VerifierList(v)); err != nil {
		return "", fmt.Errorf("the signature does not verify: %v", err)
	}
	return v.Name(), nil
}

// PublicKey is the public key, in the note verifier form, of a private key
// made by GenerateKey.
func PublicKey(skey string) (string, error) {
	if _, err := note.NewSigner(skey); err != nil {
		return "", fmt.Errorf("private key: %v", err)
	}
	parts := strings.SplitN(skey, "+", 5)
	raw, err := base64.StdEncoding.DecodeString(parts[4])
	if err != nil || len(raw) != 1+ed25519.SeedSize || raw[0] != 1 {
		return "", errors.New("private key: not an Ed25519 key")
	}
	pub := ed25519.NewKeyFromSeed(raw[1:]).Public().(ed25519.PublicKey)
	return note.NewEd25519VerifierKey(parts[2], pub)
}

// CheckPublicKey reports whether vkey is a public key in the note
// verifier form, and returns its name.
func CheckPublicKey(vkey string) (string, error) {
	v, err := note.NewVerifier(vkey)
	if err != nil {
		return "", err
	}
	return v.Name(), nil
}

// TrustedApprover checks a signed answer against the approver keys a
// session trusts and its principal: the key must be one of trusted, not
// named for the principal (who may never approve their own agent's
// calls), and the signature must verify over a. It returns the
// approver's name.
func TrustedApprover(a Approval, sig Signature, trusted []string, principal string) (string, error) {
	if !slices.Contains(trusted, sig.Key) {
		name, _ := CheckPublicKey(sig.Key)
		return name, fmt.Errorf("key %q is not one of the session's approver keys", shortKey(sig.Key))
	}
	name, err := OpenApproval(a, sig)
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

// shortKey is a public key's name and hash, without the key itself.
func shortKey(k string) string {
	if parts := strings.SplitN(k, "+", 3); len(parts) == 3 {
		return parts[0] + "+" + parts[1]
	}
	return k
}
