package chain

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/mod/sumdb/note"
)

// SignText signs text (which ends in a newline) with the private key
// skey (from GenerateKey), as a signed note would carry it. It returns
// the key's public half, in the note verifier form, and the base64
// signature. What the text means is the caller's: the chain knows keys
// and signatures, not what is signed.
func SignText(text, skey string) (vkey, sig string, err error) {
	s, err := note.NewSigner(skey)
	if err != nil {
		return "", "", fmt.Errorf("approver key: %v", err)
	}
	if vkey, err = PublicKey(skey); err != nil {
		return "", "", err
	}
	msg, err := note.Sign(&note.Note{Text: text}, s)
	if err != nil {
		return "", "", err
	}
	// The note ends "\n— <name> <base64>\n": keep the base64.
	line := strings.TrimSuffix(string(msg[len(text)+1:]), "\n")
	return vkey, line[strings.LastIndexByte(line, ' ')+1:], nil
}

// OpenText checks that sig is a signature by the public key vkey over
// text, and returns the signer's name.
func OpenText(text, vkey, sig string) (string, error) {
	v, err := note.NewVerifier(vkey)
	if err != nil {
		return "", fmt.Errorf("approver public key: %v", err)
	}
	if sig == "" || strings.ContainsAny(sig, " \n") {
		return "", errors.New("the signature is empty or malformed")
	}
	msg := text + "\n— " + v.Name() + " " + sig + "\n"
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

// ShortKey is a public key's name and hash, without the key itself.
func ShortKey(k string) string {
	if parts := strings.SplitN(k, "+", 3); len(parts) == 3 {
		return parts[0] + "+" + parts[1]
	}
	return k
}
