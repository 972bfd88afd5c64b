package engine

import (
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
				leaves(m, add, 0)
			}
		}
	}
	if structured != nil {
		leaves(structured, add, 0)
	}
	return b.String()
}

// leaves calls add with every string and number under v, except base64
// "data" fields and block "type" tags, which carry no destinations.
func leaves(v any, add func(string), depth int) {
	if depth > maxDepth {
		return
	}
	switch v := v.(type) {
	case string:
		add(v)
	case map[string]any:
		for _, k := range sortedKeys(v) {
			if k == "data" || k == "type" || k == "blob" || k == "mimeType" {
				continue
			}
			leaves(v[k], add, depth+1)
		}
	case []any:
		for _, e := range v {
			leaves(e, add, depth+1)
		}
	case nil, bool:
	default:
		if s, ok := scalarText(v); ok {
			add(s)
		}
	}
}
