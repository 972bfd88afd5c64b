package chain

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/mod/sumdb/note"
)

// KeyName is the name a private or public key was made for.
func KeyName(key string) string {
	name, _, _ := strings.Cut(strings.TrimPrefix(key, "PRIVATE+KEY+"), "+")
	return name
}

// wrongKey says whose key a checkpoint is signed with, when it is not the
// one given: by the signers' names, with key ids when a name is shared
// (two keys made for one log).
func wrongKey(v note.Verifier, sigs []note.Signature) error {
	id := func(name string, hash uint32) string { return fmt.Sprintf("%q (key id %08x)", name, hash) }
	var by []string
	for _, s := range sigs {
		by = append(by, id(s.Name, s.Hash))
	}
	if len(by) == 0 {
		return &wrongKeyError{"the checkpoint is not signed by key " + id(v.Name(), v.KeyHash()) + ": it holds no signature"}
	}
	return &wrongKeyError{"the checkpoint is not signed by key " + id(v.Name(), v.KeyHash()) + ", but by " + strings.Join(by, " and ")}
}

// ErrWrongKey is a checkpoint not signed by the key it was opened with.
var ErrWrongKey = errors.New("checkpoint not signed by the key given")

// wrongKeyError is ErrWrongKey, saying which key and which signed it.
type wrongKeyError struct{ text string }

func (e *wrongKeyError) Error() string { return e.text }
func (e *wrongKeyError) Unwrap() error { return ErrWrongKey }

// GenerateKey makes an Ed25519 key pair for signing checkpoints, in the
// sumdb/note text form: skey is secret, vkey is published. It refuses a
// name ValidKeyName refuses: note.GenerateKey would make the pair, and no
// signer could ever load it.
func GenerateKey(rand io.Reader, name string) (skey, vkey string, err error) {
	if err := ValidKeyName(name); err != nil {
		return "", "", err
	}
	return note.GenerateKey(rand, name)
}

// keyNameRule is the rule key names follow, as sumdb/note's signers and
// verifiers enforce it.
const keyNameRule = "a key name is non-empty UTF-8 without spaces or '+'"

// errKeyName is a name no note key can carry.
var errKeyName = errors.New(keyNameRule)

// ValidKeyName reports whether name can name a note key.
func ValidKeyName(name string) error {
	if name == "" || !utf8.ValidString(name) || strings.IndexFunc(name, unicode.IsSpace) >= 0 || strings.Contains(name, "+") {
		return errKeyName
	}
	return nil
}

// KeyError is a key that cannot be used where it was given. Err is one of
// ErrPublicKey, ErrPrivateKey or errNotKey; Detail, if set, is why a text
// that looks like a key is still not one.
type KeyError struct {
	Err    error
	Detail string
}

// Error ends a sentence whose subject is the key file given
// ("ci.key is a public key, …").
func (e *KeyError) Error() string {
	text := "is not a key"
	switch e.Err {
	case ErrPublicKey:
		text = "is a public key, a private key is needed"
	case ErrPrivateKey:
		text = "is a private key, a public key is needed"
	}
	if e.Detail != "" {
		return text + ": " + e.Detail
	}
	return text
}

func (e *KeyError) Unwrap() error { return e.Err }

// ParsePrivateKey checks that key is a private key in the note signer
// form (surrounding space removed) and returns it.
func ParsePrivateKey(key string) (string, error) {
	key = strings.TrimSpace(key)
	if _, err := note.NewSigner(key); err != nil {
		if _, verr := note.NewVerifier(key); verr == nil {
			return "", &KeyError{Err: ErrPublicKey}
		}
		if strings.HasPrefix(key, "PRIVATE+KEY+") {
			return "", &KeyError{Err: errNotKey, Detail: err.Error()}
		}
		return "", &KeyError{Err: errNotKey}
	}
	return key, nil
}

// ParsePublicKey checks that key is a public key in the note verifier
// form (surrounding space removed) and returns it.
func ParsePublicKey(key string) (string, error) {
	key = strings.TrimSpace(key)
	if _, err := note.NewVerifier(key); err != nil {
		if strings.HasPrefix(key, "PRIVATE+KEY+") {
			return "", &KeyError{Err: ErrPrivateKey}
		}
		return "", &KeyError{Err: errNotKey}
	}
	return key, nil
}

// The kinds of wrong key a KeyError reports; a caller tells them apart
// with errors.Is, and a CLI calls each a usage error, not a finding.
var (
	ErrPublicKey  = errors.New("public key given where a private key is needed")
	ErrPrivateKey = errors.New("private key given where a public key is needed")
	errNotKey     = errors.New("not a key")
)
