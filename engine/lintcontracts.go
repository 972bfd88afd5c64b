package engine

import (
	"strings"

	"gopkg.in/yaml.v3"
)

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

// keyFor is the key of the contract a section gives tool, as the engine
// chooses it (contractSet.lookup), or "".
func keyFor(tools map[string]*Contract, tool string) string {
	if _, ok := tools[tool]; ok {
		return tool
	}
	best, rank := "", globRank{-1, -1}
	for _, k := range sortedKeys(tools) {
		if isGlobKey(k) && matchName(k, tool) && rank.less(rankOf(k)) {
			best, rank = k, rankOf(k)
		}
	}
	return best
}

// lostControls are the restricting fields hidden sets that winner does
// not: what a tool stops being held to when winner's contract applies to
// it instead of hidden's. A contract that loosens (trusts more, asks on
// taint) is never a loss.
func lostControls(hidden, winner *Contract) []string {
	if hidden == nil {
		return nil
	}
	if winner == nil {
		winner = &Contract{}
	}
	var out []string
	if hidden.Exfiltrating != nil && *hidden.Exfiltrating && (winner.Exfiltrating == nil || !*winner.Exfiltrating) {
		out = append(out, "exfiltrating: true")
	}
	if len(hidden.SinkParams) > 0 && len(winner.SinkParams) == 0 {
		out = append(out, "sink_params")
	}
	if len(hidden.WriteParams) > 0 && len(winner.WriteParams) == 0 {
		out = append(out, "write_params")
	}
	if hidden.MaxCalls != nil && winner.MaxCalls == nil {
		out = append(out, "max_calls")
	}
	if len(hidden.ArgPatterns) > 0 && len(winner.ArgPatterns) == 0 {
		out = append(out, "arg_patterns")
	}
	return out
}

// lintOverlaps points out where a contract's controls do not reach a
// tool because another contract applies to it instead: an exact name or
// a more specific glob in the same section, or a server's own contract
// over a top-level one. Contracts never merge, so an override that drops
// exfiltrating: true or a budget is worth a look; one that keeps them is
// what an override is for, and is not reported. listed, when not nil,
// are real tool names, which make better examples than made-up ones.
func lintOverlaps(add func(int, string, string, string, ...any), root *yaml.Node, f *File, listed []string) {
	top := f.Tools
	for _, sec := range sections(f) {
		where := func(k string) int { return lineOf(root, append(sec.keys, k)...) }
		on := ""
		if sec.server != "" {
			on = "on server " + sec.server + ", "
		}
		keys := sortedKeys(sec.tools)
		for _, g := range keys {
			c := sec.tools[g]
			if isGlobKey(g) && c != nil && ((c.Exfiltrating != nil && !*c.Exfiltrating) || len(c.NotDestinations) > 0) {
				add(where(g), LintLooseGlob, g, "%sglob %s takes arguments out of the sink gate (exfiltrating: false or not_destinations), and a server chooses its tools' names: it can name a sending tool to match; name the tools exactly", on, g)
			}
		}
		seen := map[[2]string]bool{}
		report := func(hidden, winner, tool, line string, hc, wc *Contract, hiddenWhere string) {
			if seen[[2]string{hidden, winner}] {
				return
			}
			lost := lostControls(hc, wc)
			if len(lost) == 0 {
				return
			}
			seen[[2]string{hidden, winner}] = true
			add(where(line), LintOverlap, line, "%s%s applies to tools such as %s instead of %s%s, so %s's %s do not hold there", on, winner, tool, hiddenWhere, hidden, hidden, strings.Join(lost, ", "))
		}
		// Within the section: a glob kept from a name by an exact key or a
		// more specific glob.
		for _, g := range keys {
			if !isGlobKey(g) {
				continue
			}
			for _, w := range names(g, keys, listed) {
				if k := keyFor(sec.tools, w); k != g && k != "" {
					report(g, k, w, k, sec.tools[g], sec.tools[k], "")
				}
			}
		}
		if sec.server == "" {
			continue
		}
		// A server's contract over the top-level one.
		for _, t := range sortedKeys(top) {
			for _, w := range names(t, append(keys, sortedKeys(top)...), listed) {
				if keyFor(top, w) != t {
					continue
				}
				if k := keyFor(sec.tools, w); k != "" {
					report(t, k, w, k, top[t], sec.tools[k], "the top-level ")
				}
			}
		}
	}
}

// names are tool names key matches that other keys may take: the listed
// tools it matches, or, failing those, one name it shares with each other
// key.
func names(key string, others, listed []string) []string {
	var out []string
	for _, n := range listed {
		if matchName(key, n) {
			out = append(out, n)
		}
	}
	if len(out) > 0 {
		return out
	}
	for _, o := range others {
		if w, ok := globWitness(key, o); ok && o != key {
			out = append(out, w)
		} else if o == key && !isGlobKey(key) {
			out = append(out, key)
		}
	}
	return out
}
