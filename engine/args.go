package engine

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// maxDepth bounds nesting in arguments and tool definitions: deeper input
// is refused rather than walked.
const maxDepth = 64

// parseArgs decodes a tools/call arguments object. Keys are matched case
// sensitively and a key given twice is an error: a proxy that checked one
// of two "path" values must not forward the other. Numbers keep their exact
// text (json.Number). Empty input or null is an empty object.
func parseArgs(raw []byte) (map[string]any, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return map[string]any{}, nil
	}
	v, err := decodeStrict(raw)
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("arguments must be a JSON object")
	}
	return m, nil
}

// decodeStrict decodes one JSON value, refusing duplicate keys, trailing
// data and nesting deeper than maxDepth: in one pass where decodeFast is
// sure of the input, by the reference otherwise.
func decodeStrict(raw []byte) (any, error) {
	if v, ok := decodeFast(raw); ok {
		return v, nil
	}
	return decodeReference(raw)
}

// decodeReference is decodeStrict on encoding/json's token reader: what
// the fast pass is held to, and what answers (and words the error) for
// anything the fast pass leaves.
func decodeReference(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := decodeValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after JSON value")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder, depth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("nested deeper than %d levels", maxDepth)
	}
	t, err := dec.Token()
	if err != nil {
		if err == io.EOF {
			return nil, errors.New("unexpected end of JSON")
		}
		return nil, err
	}
	switch t := t.(type) {
	case json.Delim:
		switch t {
		case '{':
			m := map[string]any{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, ok := kt.(string)
				if !ok {
					return nil, errors.New("object key is not a string")
				}
				if _, dup := m[k]; dup {
					return nil, fmt.Errorf("duplicate key %q", k)
				}
				v, err := decodeValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				m[k] = v
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return m, nil
		case '[':
			l := []any{}
			for dec.More() {
				v, err := decodeValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				l = append(l, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return l, nil
		}
		return nil, fmt.Errorf("unexpected %v", t)
	default:
		return t, nil
	}
}

// CanonicalJSON encodes a decoded JSON value with sorted keys, no HTML
// escaping and numbers as written. Two calls with the same arguments have
// the same canonical bytes.
func CanonicalJSON(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	// Values from parseArgs are maps, slices, strings, json.Numbers, bools
	// and nils: they always encode.
	_ = enc.Encode(v)
	return bytes.TrimRight(buf.Bytes(), "\n")
}

// ArgsDigest is the digest grants bind to: SHA-256 over the canonical
// arguments, as "sha256:<hex>".
func ArgsDigest(args map[string]any) string {
	sum := sha256.Sum256(CanonicalJSON(args))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// ToolDef is a tool as pinned at session start: its name and the digest
// of its definition ("" when only the name is known).
type ToolDef struct {
	Name   string `json:"name"`
	Digest string `json:"digest,omitempty"`
	// Fixed holds, per argument path, the only string values the input
	// schema allows there (its enum or const). Such a value is the tool's
	// own choice, never an injected destination. The session record
	// carries it, as the schema itself is not kept.
	Fixed map[string][]string `json:"fixed,omitempty"`
}

// ParseTool reads one MCP tool object (as in a tools/list result) and
// returns its name and definition digest: SHA-256 over the canonical JSON
// of {name, description, inputSchema}. Annotations and other fields are
// presentation, not behaviour, and do not count.
func ParseTool(raw []byte) (ToolDef, error) {
	v, err := decodeStrict(raw)
	if err != nil {
		return ToolDef{}, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return ToolDef{}, errors.New("a tool must be a JSON object")
	}
	name, ok := m["name"].(string)
	if !ok || name == "" {
		return ToolDef{}, errors.New("a tool needs a string name")
	}
	desc, _ := m["description"].(string)
	if d, present := m["description"]; present && d != nil {
		if _, ok := d.(string); !ok {
			return ToolDef{}, fmt.Errorf("tool %q: description must be a string", name)
		}
	}
	def := map[string]any{"name": name, "description": desc, "inputSchema": m["inputSchema"]}
	sum := sha256.Sum256(CanonicalJSON(def))
	return ToolDef{Name: name, Digest: "sha256:" + hex.EncodeToString(sum[:]), Fixed: schemaFixed(m["inputSchema"])}, nil
}

// DecodeJSON decodes one JSON value as parseArgs does: exact keys, no
// duplicates, numbers as json.Number, bounded depth, nothing trailing.
func DecodeJSON(raw []byte) (any, error) { return decodeStrict(raw) }

// ToolFromValue is ParseTool for an already decoded tool object.
func ToolFromValue(v any) (ToolDef, error) { return ParseTool(CanonicalJSON(v)) }
