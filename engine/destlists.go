package engine

import (
	"fmt"
	"strings"
)

// listRef is how a trusted_destinations entry names a top-level list.
const listRef = "list:"

// expandLists replaces each "list:NAME" entry of a contract's
// trusted_destinations with the entries of the named list, so that one
// provider list serves every tool. The canonical form (and so an audit
// log) carries the expanded entries, as it carries packs expanded: what
// was enforced does not depend on a list defined elsewhere.
func expandLists(f *File) (*File, *compileErr) {
	if len(f.Destinations) == 0 && !anyListRef(f) {
		return f, nil
	}
	for _, name := range sortedKeys(f.Destinations) {
		if !listName(name) {
			return nil, fail(fmt.Sprintf("destination list %q: a name is lower-case letters, digits, '-' and '_'", name), "destinations", name)
		}
		if len(f.Destinations[name]) == 0 {
			return nil, fail(fmt.Sprintf("destination list %q is empty", name), "destinations", name)
		}
		for j, d := range f.Destinations[name] {
			if strings.HasPrefix(Normalize(d), listRef) {
				return nil, fail(fmt.Sprintf("destination list %q: %q names a list; lists do not nest", name, d), "destinations", name, j)
			}
			if _, err := compileDest(d); err != nil {
				return nil, fail(fmt.Sprintf("destination list %q: %v", name, err), "destinations", name, j)
			}
		}
	}
	out := *f
	out.Destinations = nil
	var ce *compileErr
	if out.Tools, ce = expandIn(f.Tools, f.Destinations, "tools"); ce != nil {
		return nil, ce
	}
	if len(f.Servers) > 0 {
		out.Servers = make(map[string]map[string]*Contract, len(f.Servers))
		for _, s := range sortedKeys(f.Servers) {
			if out.Servers[s], ce = expandIn(f.Servers[s], f.Destinations, "servers", s); ce != nil {
				return nil, ce
			}
		}
	}
	return &out, nil
}

// expandIn expands the list entries of one section's contracts; keys is
// where the section sits in the file.
func expandIn(tools map[string]*Contract, lists map[string][]string, keys ...any) (map[string]*Contract, *compileErr) {
	if tools == nil {
		return nil, nil
	}
	out := make(map[string]*Contract, len(tools))
	for _, tool := range sortedKeys(tools) {
		c := tools[tool]
		if c == nil || !hasListRef(c.TrustedDestinations) {
			out[tool] = c
			continue
		}
		cp := *c
		cp.TrustedDestinations = nil
		for i, d := range c.TrustedDestinations {
			n := Normalize(d)
			if !strings.HasPrefix(n, listRef) {
				cp.TrustedDestinations = append(cp.TrustedDestinations, d)
				continue
			}
			list, ok := lists[n[len(listRef):]]
			if !ok {
				return nil, fail(fmt.Sprintf("tool %q: %q names no list under destinations", tool, d), append(keys, tool, "trusted_destinations", i)...)
			}
			cp.TrustedDestinations = append(cp.TrustedDestinations, list...)
		}
		out[tool] = &cp
	}
	return out, nil
}

func anyListRef(f *File) bool {
	sections := []map[string]*Contract{f.Tools}
	for _, s := range f.Servers {
		sections = append(sections, s)
	}
	for _, tools := range sections {
		for _, c := range tools {
			if c != nil && hasListRef(c.TrustedDestinations) {
				return true
			}
		}
	}
	return false
}

func hasListRef(ds []string) bool {
	for _, d := range ds {
		if strings.HasPrefix(Normalize(d), listRef) {
			return true
		}
	}
	return false
}

func listName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !('a' <= r && r <= 'z' || '0' <= r && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}
