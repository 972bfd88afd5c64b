package chain

import (
	"bytes"
	"encoding/json"
	"errors"

	fastjson "github.com/segmentio/encoding/json"
)

// How record bodies are encoded and decoded: canonical JSON, through a
// body's own fast path where it has one.

// A Canonical body writes its own encoding, the bytes marshalBody would
// give, without reflection; ok false means it cannot, and encoding/json
// is used. Bodies of the kinds a log holds most of implement it: their
// encoding is most of the cost of writing and checking a log.
type Canonical interface {
	AppendCanonical(dst []byte) (b []byte, ok bool)
}

// A FastDecoder decodes its own body without reflection. It reports false
// for anything it does not read exactly as DecodeGeneral would (then
// DecodeGeneral runs), so what is accepted, and every error, is the same.
type FastDecoder interface {
	DecodeFast(body []byte) bool
}

// marshalBody encodes a body value the way records store it.
func marshalBody(v any) ([]byte, error) {
	if c, ok := v.(Canonical); ok {
		if b, ok := c.AppendCanonical(nil); ok {
			return b, nil
		}
	}
	return MarshalGeneral(v)
}

// MarshalGeneral is marshalBody through encoding/json alone: the
// reference a Canonical body is fuzzed against.
func MarshalGeneral(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if len(b) < 2 || b[0] != '{' {
		return nil, errors.New("a record body must be a JSON object")
	}
	return b, nil
}

// DecodeBody decodes a record's body into v (a pointer to a body type).
// Unknown fields, and fields not in canonical form, are errors: two
// encodings of one body would mean two hashes for one meaning.
func DecodeBody(body []byte, v any) error {
	// Unknown, repeated and case-folded keys all decode, and all change
	// the re-encoding: comparing it with the input refuses them. That also
	// makes a faster decoder safe to use: whatever it reads, the bytes
	// accepted are exactly encoding/json's encoding of the values read.
	if f, ok := v.(FastDecoder); ok && f.DecodeFast(body) {
		return nil
	}
	return DecodeGeneral(body, v)
}

// DecodeGeneral is DecodeBody through reflection alone, without the
// body's own decoder: the reference a FastDecoder is fuzzed against.
func DecodeGeneral(body []byte, v any) error {
	rest, err := fastjson.Parse(body, v, fastjson.UseNumber)
	if err != nil {
		return err
	}
	if len(rest) != 0 {
		return errors.New("trailing data after the body")
	}
	again, err := marshalBody(v)
	if err != nil {
		return err
	}
	if !bytes.Equal(again, body) {
		return errors.New("body is not in canonical form (field order, escaping or a repeated key)")
	}
	return nil
}
