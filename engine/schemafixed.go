package engine

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Bounds on what a schema may fix, so a hostile tools/list answer cannot
// make every session record huge.
const (
	maxFixedValues = 1024
	maxFixedLen    = 1024
)

// schemaFixed reads, from a tool's input schema, the string values each
// argument is fixed to: its enum (the strings in it) or its const. It
// follows properties and a single items schema (not beside prefixItems),
// and nothing else: a value under anyOf, oneOf, additionalProperties or
// the like, or in a schema holding a $ref, is not fixed by the keyword
// found there, so it is left as any other value. Keys are fixedKey paths.
func schemaFixed(schema any) map[string][]string {
	if m, ok := schema.(map[string]any); ok && m["$schema"] != nil && !knownDialect(m["$schema"]) {
		// An older or unknown dialect may not have const, or read enum
		// otherwise: nothing is known to bind.
		return nil
	}
	out := map[string][]string{}
	n := 0
	var walk func(v any, key string, depth int)
	walk = func(v any, key string, depth int) {
		m, ok := v.(map[string]any)
		if !ok || depth > maxDepth || m["$ref"] != nil || m["$dynamicRef"] != nil || m["$recursiveRef"] != nil {
			// Beside a $ref, draft-07 ignores every other keyword: nothing
			// here, or below, is known to bind.
			return
		}
		if key != "" {
			var vals []string
			if e, ok := m["enum"].([]any); ok {
				for _, x := range e {
					if s, ok := x.(string); ok && len(s) <= maxFixedLen {
						vals = append(vals, s)
					}
				}
			}
			if c, present := m["const"]; present {
				// const and enum both bind: only a value in both passes, and
				// a const that is no string (or too long to keep) lets no
				// listed string through.
				cs, ok := c.(string)
				_, hasEnum := m["enum"]
				if ok && len(cs) <= maxFixedLen && (!hasEnum || slices.Contains(vals, cs)) {
					vals = []string{cs}
				} else {
					vals = nil
				}
			}
			if len(vals) > 0 && n+len(vals) <= maxFixedValues {
				slices.Sort(vals)
				out[key] = slices.Compact(vals)
				n += len(vals)
			}
		}
		if props, ok := m["properties"].(map[string]any); ok {
			for _, k := range sortedKeys(props) {
				walk(props[k], fixedKey(key, k), depth+1)
			}
		}
		if items, ok := m["items"].(map[string]any); ok && key != "" && m["prefixItems"] == nil {
			// With prefixItems (2020-12), items governs only the elements
			// after them; which index is which is not kept, so neither is.
			walk(items, key+"[*]", depth+1)
		}
	}
	walk(schema, "", 0)
	if len(out) == 0 {
		return nil
	}
	return out
}

// fixedKey adds an object key to a fixed path: plain keys as .key, any
// other quoted in brackets, so that no two paths are written alike. An
// element of a list, whatever its index, is [*].
func fixedKey(prefix, k string) string {
	plain := k != ""
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			plain = false
			break
		}
	}
	if !plain {
		return prefix + "[" + strconv.Quote(k) + "]"
	}
	if prefix == "" {
		return k
	}
	return prefix + "." + k
}

// fixedPath is the fixed path of an argument's segments.
func fixedPath(segs []seg) string {
	key := ""
	for _, s := range segs {
		if s.idx >= 0 {
			key += "[*]"
			continue
		}
		key = fixedKey(key, s.key)
	}
	return key
}

// knownDialect tells whether a $schema names a JSON Schema dialect in
// which enum and const bind as read here: draft-06 onwards. MCP's default,
// with no $schema, is 2020-12.
func knownDialect(v any) bool {
	s, ok := v.(string)
	if !ok {
		return false
	}
	for _, d := range []string{"json-schema.org/draft-06/", "json-schema.org/draft-07/", "json-schema.org/draft/2019-09/", "json-schema.org/draft/2020-12/"} {
		if strings.Contains(s, d) {
			return true
		}
	}
	return false
}

func fixedReason(fixed []*dest) string {
	if len(fixed) == 1 {
		return fmt.Sprintf("destination %s %q is a value the tool's pinned input schema fixes, not one an output could have chosen", fixed[0].path, fixed[0].raw)
	}
	var each []string
	for _, d := range fixed {
		each = append(each, fmt.Sprintf("%s %q", d.path, d.raw))
	}
	return "destinations " + strings.Join(each, ", ") + " are values the tool's pinned input schema fixes, not ones an output could have chosen"
}
