package engine

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// section is one set of contracts as the file holds them: the top-level
// tools, or one server's.
type section struct {
	server string // "" for the top level
	keys   []any  // where it sits in the file
	tools  map[string]*Contract
	set    *contractSet // as compiled: which key a tool gets
}

// sections are the sections of pol's expanded file f.
func sections(f *File, pol *Policy) []section {
	out := []section{{keys: []any{"tools"}, tools: f.Tools, set: &pol.contracts}}
	for _, s := range sortedKeys(f.Servers) {
		out = append(out, section{server: s, keys: []any{"servers", s}, tools: f.Servers[s], set: pol.servers[s]})
	}
	return out
}

// keyFor is the key whose contract the section gives tool, or "".
func (sec section) keyFor(tool string) string {
	k, _ := sec.set.find(tool)
	return k
}

// lostControls are what a tool stops being held to when winner's
// contract applies to it instead of hidden's: a restricting field hidden
// sets that winner leaves out or sets looser. Trusting other
// destinations is not counted: trust per server is what a server's own
// section is for.
func lostControls(hidden, winner *Contract) []string {
	if hidden == nil {
		return nil
	}
	if winner == nil {
		winner = &Contract{}
	}
	var out []string
	exfil := func(c *Contract) string {
		switch {
		case c.Exfiltrating == nil:
			return "unset"
		case *c.Exfiltrating:
			return "true"
		}
		return "false"
	}
	switch he, we := exfil(hidden), exfil(winner); {
	case he == "true" && we != "true":
		out = append(out, "exfiltrating: true")
	case he == "unset" && we == "false":
		out = append(out, "the sink gate on destination-shaped arguments (exfiltrating: false)")
	}
	if miss := absent(hidden.SinkParams, winner.SinkParams); len(miss) > 0 {
		out = append(out, "sink_params "+strings.Join(miss, ", "))
	} else if len(hidden.SinkParams) == 0 && len(winner.SinkParams) > 0 && exfil(hidden) != "false" {
		// With none named, every argument is a destination when no name
		// looks like one; naming some narrows that to them.
		out = append(out, "the gate on every argument (no sink_params)")
	}
	if miss := absent(hidden.WriteParams, winner.WriteParams); len(miss) > 0 {
		out = append(out, "write_params "+strings.Join(miss, ", "))
	}
	if more := absent(winner.AllowedPathPrefixes, hidden.AllowedPathPrefixes); len(more) > 0 && len(hidden.WriteParams) > 0 {
		out = append(out, "allowed_path_prefixes (the other also allows "+strings.Join(more, ", ")+")")
	}
	if more := absent(winner.NotDestinations, hidden.NotDestinations); len(more) > 0 {
		out = append(out, "the sink gate on "+strings.Join(more, ", ")+" (not_destinations)")
	}
	if hidden.MaxCalls != nil && (winner.MaxCalls == nil || *winner.MaxCalls > *hidden.MaxCalls) {
		out = append(out, fmt.Sprintf("max_calls: %d", *hidden.MaxCalls))
	}
	for _, k := range sortedKeys(hidden.ArgPatterns) {
		if w, ok := winner.ArgPatterns[k]; !ok || w != hidden.ArgPatterns[k] {
			out = append(out, fmt.Sprintf("arg_patterns %s: %s", k, hidden.ArgPatterns[k]))
		}
	}
	if hidden.OnTaint != "ask" && winner.OnTaint == "ask" {
		out = append(out, "on_taint: deny")
	}
	first := func(c *Contract) string { return cmp.Or(c.OnFirstParty, c.OnTaint) }
	self := func(c *Contract) string { return cmp.Or(c.OnSelfPublished, first(c)) }
	// Reported where winner says ask itself: what it inherits from a
	// looser on_taint is on_taint's finding.
	if first(hidden) != "ask" && winner.OnFirstParty == "ask" {
		out = append(out, "on_first_party: deny")
	}
	if self(hidden) != "ask" && winner.OnSelfPublished == "ask" {
		out = append(out, "on_self_published: deny")
	}
	return out
}

// absent are the entries of a that b lacks.
func absent(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
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
func lintOverlaps(add func(int, string, string, string, ...any), root *yaml.Node, f *File, pol *Policy, listed []string) {
	secs := sections(f, pol)
	top := secs[0]
	for _, sec := range secs {
		where := func(k string) int { return lineOf(root, append(sec.keys, k)...) }
		on := ""
		if sec.server != "" {
			on = "on server " + sec.server + ", "
		}
		keys := sortedKeys(sec.tools)
		for _, g := range keys {
			c := sec.tools[g]
			if isGlobKey(g) && c != nil && ((c.Exfiltrating != nil && !*c.Exfiltrating) || len(c.NotDestinations) > 0) {
				what := "sets exfiltrating: false"
				if len(c.NotDestinations) > 0 {
					what = "takes " + strings.Join(c.NotDestinations, ", ") + " out of the sink gate (not_destinations)"
				}
				add(where(g), lintLooseGlob, g, "%sglob %s %s, and a server chooses its tools' names: it can name a sending tool to match; name the tools exactly", on, g, what)
			}
		}
		seen := map[[2]string]bool{}
		// report says that hidden (described as hiddenName) does not
		// reach tool, where winner applies; the finding sits on winner.
		report := func(hidden, winner, tool, hiddenName, winnerName string, hc, wc *Contract) {
			if seen[[2]string{hidden, winner}] {
				return
			}
			lost := lostControls(hc, wc)
			if len(lost) == 0 {
				return
			}
			seen[[2]string{hidden, winner}] = true
			at := ""
			if sec.server != "" {
				at = " on server " + sec.server
			}
			if tool == "" {
				tool = "some tools both match"
			}
			add(where(winner), lintOverlap, winner, "%s does not apply to %s%s: %s does, which drops %s", hiddenName, tool, at, winnerName, strings.Join(lost, "; "))
		}
		name := func(k, in string) string {
			kind := "contract"
			if isGlobKey(k) {
				kind = "glob"
			}
			return in + kind + " " + k
		}
		mine := ""
		if sec.server != "" {
			mine = sec.server + "'s "
		}
		// Within the section: a glob kept from some names by an exact key
		// or a more specific glob.
		for _, g := range keys {
			if !isGlobKey(g) {
				continue
			}
			for _, k := range keys {
				if k == g || (isGlobKey(k) && !rankOf(g).less(rankOf(k))) {
					continue
				}
				if w, ok := example(g, k, listed, func(w string) bool { return sec.keyFor(w) == k }); ok {
					report(g, k, w, name(g, mine), name(k, mine), sec.tools[g], sec.tools[k])
				}
			}
		}
		if sec.server == "" {
			continue
		}
		// A server's contract over the top-level one.
		for _, t := range sortedKeys(top.tools) {
			for _, k := range keys {
				if w, ok := example(t, k, listed, func(w string) bool { return top.keyFor(w) == t && sec.keyFor(w) == k }); ok {
					report(t, k, w, name(t, "the top-level "), name(k, mine), top.tools[t], sec.tools[k])
				}
			}
		}
	}
}

// example is a name both keys match where the override applies (ok): a
// listed tool if one is, else the shortest common name. Keys that only
// meet in names a third key takes are still reported when both are globs,
// as "tools both match": which names those are is not worked out, and a
// finding too many is better than a loosened tool unreported. An exact
// key names its one tool, which either is such a name or is not.
func example(a, b string, listed []string, ok func(string) bool) (string, bool) {
	for _, n := range listed {
		if matchName(a, n) && matchName(b, n) && ok(n) {
			return n, true
		}
	}
	w, overlap := globWitness(a, b)
	switch {
	case !overlap:
		return "", false
	case ok(w):
		return w, true
	case isGlobKey(a) && isGlobKey(b):
		return "", true
	}
	return "", false
}
