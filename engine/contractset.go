package engine

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// maxGlobKey bounds a glob contract key; MCP tool names are at most 128
// characters.
const maxGlobKey = 256

// contractSet is the contracts of one section of a policy: the top-level
// tools, or one server's. A key is an exact tool name or a glob.
type contractSet struct {
	exact map[string]*contract
	globs []globContract // most specific first; no two of equal rank overlap
}

type globContract struct {
	key  string
	g    glob
	rank globRank
	c    *contract
}

// globRank orders globs by how much of a name they fix: literal
// characters first, then single-character wildcards.
type globRank struct{ lits, singles int }

func (a globRank) less(b globRank) bool {
	if a.lits != b.lits {
		return a.lits < b.lits
	}
	return a.singles < b.singles
}

func rankOf(g string) globRank {
	var r globRank
	for _, c := range g {
		switch c {
		case '*':
		case '?':
			r.singles++
		default:
			r.lits++
		}
	}
	return r
}

func isGlobKey(k string) bool { return strings.ContainsAny(k, "*?") }

func (cs *contractSet) lookup(tool string) *contract {
	_, c := cs.find(tool)
	return c
}

// find is the key and the contract the section gives tool: an exact
// name, else the most specific glob that matches; "" and nil for none.
func (cs *contractSet) find(tool string) (string, *contract) {
	if c, ok := cs.exact[tool]; ok {
		return tool, c
	}
	for i := range cs.globs {
		if cs.globs[i].g.match(tool) {
			return cs.globs[i].key, cs.globs[i].c
		}
	}
	return "", nil
}

func (cs *contractSet) each(f func(*contract)) {
	for _, c := range cs.exact {
		f(c)
	}
	for _, g := range cs.globs {
		f(g.c)
	}
}

// compileSet compiles one section. keys is where the section sits in the
// file ("tools", or "servers", NAME), for the line of an error.
func compileSet(tools map[string]*Contract, keys ...any) (contractSet, *compileErr) {
	cs := contractSet{exact: map[string]*contract{}}
	on := ""
	if len(keys) > 1 {
		on = fmt.Sprintf("server %v: ", keys[1])
	}
	at := func(ce *compileErr) *compileErr {
		// compileContract names its keys from "tools"; move them under
		// the section.
		ce.keys = append(append([]any{}, keys...), ce.keys[1:]...)
		return ce
	}
	for _, name := range sortedKeys(tools) {
		c, ce := compileContract(name, tools[name])
		if ce != nil {
			return cs, at(ce)
		}
		if c.rate != nil {
			// A rate counts the calls of its own contract entry: every
			// tool a glob entry matches shares it.
			c.rate.scope = "tools." + name
			if len(keys) > 1 {
				c.rate.scope = fmt.Sprintf("servers.%v.%s", keys[1], name)
			}
		}
		if !isGlobKey(name) {
			cs.exact[name] = c
			continue
		}
		if err := checkGlob(name); err != nil {
			return cs, at(fail(err.Error(), "tools", name))
		}
		if utf8.RuneCountInString(name) > maxGlobKey {
			// Each pair of globs is checked for overlap at load, in time
			// the product of their lengths.
			return cs, at(fail(fmt.Sprintf("glob %.40q… is longer than %d characters", name, maxGlobKey), "tools", name))
		}
		cs.globs = append(cs.globs, globContract{key: name, g: compileGlob(name), rank: rankOf(name), c: c})
	}
	// Sorted keys first, so globs of equal rank keep a fixed order; a
	// stable sort then puts the most specific first.
	sort.SliceStable(cs.globs, func(i, j int) bool { return cs.globs[j].rank.less(cs.globs[i].rank) })
	for i, a := range cs.globs {
		for _, b := range cs.globs[i+1:] {
			if a.rank != b.rank {
				break
			}
			if w, ok := globWitness(a.key, b.key); ok {
				return cs, at(fail(fmt.Sprintf("%scontracts %q and %q both match tools such as %q and neither is more specific: make one glob fix more characters than the other, or merge the two", on, a.key, b.key, w), "tools", b.key))
			}
		}
	}
	return cs, nil
}

// compileServers compiles the server sections. A server is named
// exactly, as the gateway and the log name it.
func compileServers(servers map[string]map[string]*Contract) (map[string]*contractSet, *compileErr) {
	if len(servers) == 0 {
		return nil, nil
	}
	out := map[string]*contractSet{}
	for _, s := range sortedKeys(servers) {
		if s == "" || isGlobKey(s) {
			return nil, fail(fmt.Sprintf("servers: %q is not a server name: a section names one server exactly", s), "servers", s)
		}
		cs, ce := compileSet(servers[s], "servers", s)
		if ce != nil {
			return nil, ce
		}
		out[s] = &cs
	}
	return out, nil
}

// contractFor is the contract a tool of a server gets: the server's own
// section first, then the top level; in each an exact name, then the most
// specific glob that matches.
func (p *Policy) contractFor(ref ToolRef) *contract {
	if cs, ok := p.servers[ref.Server]; ok {
		if c := cs.lookup(ref.Tool); c != nil {
			return c
		}
	}
	if c := p.contracts.lookup(ref.Tool); c != nil {
		return c
	}
	return noContract
}

// globWitness returns a tool name both globs match, if one exists. Names
// hold '/' as any other character, so every star is alike. reach[i][j]
// tells whether the rest of a from token i and the rest of b from token
// j match some string in common; it is filled from the ends, then walked
// from the start to spell one such string: time and space are the
// product of the two lengths, whatever the patterns.
func globWitness(a, b string) (string, bool) {
	pa, pb := globTokens(a), globTokens(b)
	n, m := len(pa), len(pb)
	star := func(t globToken) bool { return t.kind == tokStar || t.kind == tokStars }
	reach := make([][]bool, n+1)
	for i := range reach {
		reach[i] = make([]bool, m+1)
	}
	// step lists the moves out of (i, j): where it leads, and the
	// character it spells (-1 for none).
	type move struct {
		i, j int
		r    rune
	}
	steps := func(i, j int, out []move) []move {
		out = out[:0]
		sa, sb := i < n && star(pa[i]), j < m && star(pb[j])
		if sa {
			out = append(out, move{i + 1, j, -1})
		}
		if sb {
			out = append(out, move{i, j + 1, -1})
		}
		if i < n && j < m {
			ta, tb := pa[i], pb[j]
			switch {
			case sa && sb:
			case sa:
				out = append(out, move{i, j + 1, produce(tb)})
			case sb:
				out = append(out, move{i + 1, j, produce(ta)})
			case ta.kind == tokRune && tb.kind == tokRune:
				if ta.r == tb.r {
					out = append(out, move{i + 1, j + 1, ta.r})
				}
			case ta.kind == tokRune:
				out = append(out, move{i + 1, j + 1, ta.r})
			default:
				out = append(out, move{i + 1, j + 1, produce(tb)})
			}
		}
		return out
	}
	var buf []move
	reach[n][m] = true
	for i := n; i >= 0; i-- {
		for j := m; j >= 0; j-- {
			if i == n && j == m {
				continue
			}
			for _, mv := range steps(i, j, buf) {
				if reach[mv.i][mv.j] {
					reach[i][j] = true
					break
				}
			}
		}
	}
	if !reach[0][0] {
		return "", false
	}
	var w []rune
	for i, j := 0, 0; i < n || j < m; {
		for _, mv := range steps(i, j, buf) {
			if reach[mv.i][mv.j] {
				if mv.r != -1 {
					w = append(w, mv.r)
				}
				i, j = mv.i, mv.j
				break
			}
		}
	}
	return string(w), true
}

// produce is a character a literal or ? token stands for.
func produce(t globToken) rune {
	if t.kind == tokOne {
		return 'x'
	}
	return t.r
}

// ContractServers are the servers whose own section gives tool a
// contract, sorted: where the tool is held to something other than the
// top-level contract.
func (p *Policy) ContractServers(tool string) []string {
	var out []string
	for s, cs := range p.servers {
		if cs.lookup(tool) != nil {
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}
