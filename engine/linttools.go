package engine

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// lintNotGlob is the kind of finding that lists what a not_destinations
// glob takes out of the listed tools.
const lintNotGlob = "not-destinations-glob"

// ListedTool is a tool a server lists, with the argument paths its input
// schema declares (list elements as "[]").
type ListedTool struct {
	Name string
	// Server is the server that lists it, when known: lint then judges
	// rules and servers: sections by their server too.
	Server string
	Paths  []schemaPath
	// Hints are the annotations the tool sets true (readOnlyHint, …),
	// sorted; a reviewer weighs them, the engine never trusts them.
	Hints []string
	// Dests are the top-level arguments its schema declares whose names
	// look like destinations (destinationShaped), sorted.
	Dests []string
}

type schemaPath struct {
	segs []seg // list elements as index 0
	text string
}

// ListedTools reads a tools/list result ({"tools": [...]}) or a bare
// list of tool objects, with each tool's argument paths.
func ListedTools(data []byte) ([]ListedTool, error) {
	v, err := decodeStrict(data)
	if err != nil {
		return nil, fmt.Errorf("not valid JSON: %v", err)
	}
	if m, ok := v.(map[string]any); ok {
		v = m["tools"]
	}
	l, ok := v.([]any)
	if !ok {
		return nil, errors.New(`want a tools/list result: {"tools": [...]}`)
	}
	var out []ListedTool
	for i, t := range l {
		def, err := ToolFromValue(t)
		if err != nil {
			return nil, fmt.Errorf("tools[%d]: %v", i, err)
		}
		obj, _ := t.(map[string]any) // ToolFromValue refuses anything else
		lt := ListedTool{Name: def.Name}
		schemaPaths(obj["inputSchema"], nil, "", 0, &lt.Paths)
		for _, p := range lt.Paths {
			if len(p.segs) == 1 && p.segs[0].idx < 0 && destinationShaped(p.segs[0].key) {
				lt.Dests = append(lt.Dests, p.segs[0].key)
			}
		}
		annots, _ := obj["annotations"].(map[string]any)
		for _, k := range sortedKeys(annots) {
			if v, ok := annots[k].(bool); ok && v {
				lt.Hints = append(lt.Hints, k)
			}
		}
		out = append(out, lt)
	}
	return out, nil
}

// schemaPaths collects the paths a schema's properties and items
// declare, to a bounded depth and count.
func schemaPaths(schema any, segs []seg, text string, depth int, out *[]schemaPath) {
	m, ok := schema.(map[string]any)
	if !ok || depth > 16 || len(*out) > 1000 {
		return
	}
	if props, ok := m["properties"].(map[string]any); ok {
		for _, k := range sortedKeys(props) {
			sub := append(segs[:len(segs):len(segs)], seg{key: k, idx: -1})
			t := k
			if text != "" {
				t = text + "." + k
			}
			*out = append(*out, schemaPath{segs: sub, text: t})
			schemaPaths(props[k], sub, t, depth+1, out)
		}
	}
	if items, ok := m["items"].(map[string]any); ok {
		schemaPaths(items, append(segs[:len(segs):len(segs)], seg{idx: 0}), text+"[]", depth+1, out)
	}
}

// lintNotGlobs lists, for each not_destinations entry with a glob, the
// destination-shaped arguments of the listed tools it takes out, or says
// it takes out none: a glob's reach is what a reviewer has to see.
func lintNotGlobs(add func(int, string, string, string, ...any), root *yaml.Node, f *File, pol *Policy, listed []ListedTool) {
	if listed == nil {
		return
	}
	for _, sec := range sections(f, pol) {
		for _, key := range sortedKeys(sec.tools) {
			for i, entry := range sec.tools[key].NotDestinations {
				n, err := parseNotPath(entry)
				if err != nil || !n.glob {
					continue
				}
				line := lineOf(root, append(sec.keys, key, "not_destinations", i)...)
				var took []string
				for _, t := range listed {
					if sec.keyFor(t.Name) != key {
						continue
					}
					var paths []string
					for _, p := range t.Paths {
						if last := p.segs[len(p.segs)-1]; last.idx < 0 && destinationShaped(last.key) && excludes(n, p.segs) {
							paths = append(paths, p.text)
						}
					}
					if len(paths) > 0 {
						took = append(took, t.Name+"'s "+strings.Join(paths, ", "))
					}
				}
				sort.Strings(took)
				if len(took) == 0 {
					add(line, lintNotGlob, key, "not_destinations %q takes out no destination-shaped argument of the listed tools", entry)
					continue
				}
				if len(took) > 20 {
					took = append(took[:20], fmt.Sprintf("and %d more", len(took)-20))
				}
				add(line, lintNotGlob, key, "not_destinations %q takes out %s: their values are never checked as destinations", entry, strings.Join(took, "; "))
			}
		}
	}
}
