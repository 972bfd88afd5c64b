package clientconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"

	"bailiff/internal/jsontext"
)

// object is a JSON object that keeps its keys in order and where each
// value lies in the text it was read from, so rewriting a config changes
// only the bytes it must.
type object []member

type member struct {
	Key string
	Val json.RawMessage
	// start and end are Val's offsets in the parsed text; Val is exactly
	// those bytes.
	start, end int
	// tight writes the member with no space after its colon: the mark
	// of an upstream entry kept a level deeper (see shift).
	tight bool
}

func parseObject(b []byte) (object, error) {
	o, err := parseMembers(b)
	if err != nil {
		return nil, plainConfigError(b, err)
	}
	return o, nil
}

func parseMembers(b []byte) (object, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	t, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := t.(json.Delim); !ok || d != '{' {
		return nil, errors.New("not a JSON object")
	}
	var o object
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		if o.get(k.(string)) != nil {
			return nil, fmt.Errorf("key %q appears twice", k)
		}
		end := int(dec.InputOffset())
		o = append(o, member{Key: k.(string), Val: v, start: end - len(v), end: end})
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after the object")
	}
	return o, nil
}

// plainConfigError says what is wrong with a config in words, with the
// line, rather than as the decoder's "EOF".
func plainConfigError(b []byte, err error) error {
	var se *json.SyntaxError
	switch {
	case errors.Is(err, io.EOF) && len(bytes.TrimSpace(b)) == 0:
		return errors.New("it is empty, not a JSON object")
	case errors.As(err, &se):
		return fmt.Errorf("line %d: %v", 1+bytes.Count(b[:min(int(se.Offset), len(b))], []byte("\n")), se)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("it ends in the middle of a value")
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return jsontext.PlainJSON(err, "")
	}
	return err
}

func (o object) get(k string) json.RawMessage {
	if m := o.member(k); m != nil {
		return m.Val
	}
	return nil
}

func (o object) member(k string) *member {
	for i := range o {
		if o[i].Key == k {
			return &o[i]
		}
	}
	return nil
}

func (o object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(m.Key)
		b.Write(k)
		b.WriteByte(':')
		b.Write(m.Val)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// indented writes o one key a line at indentation ind, re-indenting only
// the values of the keys in fresh (which bailiff made): every other value,
// the original entry above all, is kept byte for byte.
func (o object) indented(ind string, fresh ...string) []byte {
	var b bytes.Buffer
	inner := ind + "  "
	b.WriteString("{\n")
	for i, m := range o {
		if i > 0 {
			b.WriteString(",\n")
		}
		k, _ := json.Marshal(m.Key)
		b.WriteString(inner)
		b.Write(k)
		if m.tight {
			b.WriteString(":")
		} else {
			b.WriteString(": ")
		}
		if !slices.Contains(fresh, m.Key) || json.Indent(&b, m.Val, inner, "  ") != nil {
			b.Write(m.Val)
		}
	}
	b.WriteString("\n" + ind + "}")
	return b.Bytes()
}

// edit replaces old[start:end] with text.
type edit struct {
	start, end int
	text       []byte
}

func apply(old []byte, edits []edit) []byte {
	var out bytes.Buffer
	at := 0
	for _, e := range edits {
		out.Write(old[at:e.start])
		out.Write(e.text)
		at = e.end
	}
	out.Write(old[at:])
	return out.Bytes()
}

// lineIndent is the leading space of the line holding offset at.
func lineIndent(b []byte, at int) string {
	line := b[bytes.LastIndexByte(b[:at], '\n')+1:]
	return string(line[:len(line)-len(bytes.TrimLeft(line, " \t"))])
}
