package engine

import "gopkg.in/yaml.v3"

// section is one set of contracts as the file holds them: the top-level
// tools, or one server's.
type section struct {
	server string // "" for the top level
	keys   []any  // where it sits in the file
	tools  map[string]*Contract
}

func sections(f *File) []section {
	out := []section{{keys: []any{"tools"}, tools: f.Tools}}
	for _, s := range sortedKeys(f.Servers) {
		out = append(out, section{server: s, keys: []any{"servers", s}, tools: f.Servers[s]})
	}
	return out
}

// lintOverlaps points out where one contract keeps another from applying:
// an exact name or a more specific glob in the same section, or a
// server's own contract over a top-level one. Contracts never merge, so a
// field the hidden contract sets (exfiltrating: true, say) is not in
// force there. Equally specific globs that overlap do not load at all.
func lintOverlaps(add func(int, string, string, string, ...any), root *yaml.Node, f *File) {
	secs := sections(f)
	for _, sec := range secs {
		keys := sortedKeys(sec.tools)
		where := func(k string) int { return lineOf(root, append(sec.keys, k)...) }
		for _, g := range keys {
			if !isGlobKey(g) {
				continue
			}
			if c := sec.tools[g]; c != nil && c.Exfiltrating != nil && !*c.Exfiltrating {
				add(where(g), LintLooseGlob, g, "glob %s sets exfiltrating: false, so a server can take any tool out of the sink gate by naming it to match; name the tools exactly", g)
			}
			for _, k := range keys {
				if k == g {
					continue
				}
				w, ok := globWitness(g, k)
				if !ok {
					continue
				}
				switch {
				case !isGlobKey(k):
					add(where(k), LintOverlap, k, "%s has its own contract, so glob %s does not apply to it", k, g)
				case rankOf(g).less(rankOf(k)):
					add(where(g), LintOverlap, g, "tools such as %s match %s and %s; only %s, the more specific, applies to them", w, g, k, k)
				}
			}
		}
		if sec.server == "" {
			continue
		}
		for _, k := range keys {
			for _, t := range sortedKeys(f.Tools) {
				if w, ok := globWitness(k, t); ok {
					add(where(k), LintOverlap, k, "on server %s, %s replaces the top-level contract %s for tools such as %s: nothing of %s applies there", sec.server, k, t, w, t)
				}
			}
		}
	}
}
