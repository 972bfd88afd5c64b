package engine

import (
	"errors"
	"fmt"
	"strings"
)

// OutputText is the text of a tool result that taint is computed from:
// the plain text, the text of every content block (text, embedded resource
// text and URIs, resource links), and every string and number in the
// structured content. Binary data (images, audio) is left out; an unknown
// block type contributes all its strings, so new formats fail closed.
func OutputText(text string, content, structured any) string {
	var b strings.Builder
	add := func(s string) {
		if s == "" {
			return
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(s)
	}
	add(text)
	if blocks, ok := content.([]any); ok {
		for _, blk := range blocks {
			m, ok := blk.(map[string]any)
			if !ok {
				continue
			}
			switch m["type"] {
			case "text":
				s, _ := m["text"].(string)
				add(s)
			case "image", "audio":
			default:
				leaves(m, add, 0, true)
			}
		}
	}
	if structured != nil {
		// Structured content is the server's own JSON: {"data": …} is a
		// common envelope, not a binary payload, so every key counts.
		leaves(structured, add, 0, false)
	}
	return b.String()
}

// leaves calls add with every string and number under v. In a content
// block (block set) base64 "data" and "blob" fields and "type" and
// "mimeType" tags carry no destinations and are skipped; in structured
// content, the server's own JSON, every key counts, as a string too.
func leaves(v any, add func(string), depth int, block bool) {
	if depth > maxDepth {
		return
	}
	switch v := v.(type) {
	case string:
		add(v)
	case map[string]any:
		for _, k := range sortedKeys(v) {
			if block && (k == "data" || k == "type" || k == "blob" || k == "mimeType") {
				continue
			}
			if !block {
				add(k)
			}
			leaves(v[k], add, depth+1, block)
		}
	case []any:
		for _, e := range v {
			leaves(e, add, depth+1, block)
		}
	case nil, bool:
	default:
		if s, ok := scalarText(v); ok {
			add(s)
		}
	}
}

// OutputJSON is the evidence form of a tool result, the bytes an audit
// log's evidence store keeps: the canonical JSON object
// {"content":…,"structured":…,"text":…} with absent parts left out.
func OutputJSON(text string, content, structured any) []byte {
	m := map[string]any{}
	if text != "" {
		m["text"] = text
	}
	if content != nil {
		m["content"] = content
	}
	if structured != nil {
		m["structured"] = structured
	}
	return CanonicalJSON(m)
}

// OutputFromJSON reads evidence written by OutputJSON and returns the
// text taint is computed from.
func OutputFromJSON(b []byte) (string, error) {
	v, err := decodeStrict(b)
	if err != nil {
		return "", err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return "", errors.New("evidence is not a JSON object")
	}
	var text string
	for k, v := range m {
		switch k {
		case "text":
			if text, ok = v.(string); !ok {
				return "", errors.New("evidence text is not a string")
			}
		case "content":
			if _, ok := v.([]any); !ok {
				return "", errors.New("evidence content is not a list of content blocks")
			}
		case "structured":
		default:
			return "", fmt.Errorf("evidence has unknown key %q", k)
		}
	}
	return OutputText(text, m["content"], m["structured"]), nil
}
