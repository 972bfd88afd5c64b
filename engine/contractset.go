package engine

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

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
	if c, ok := cs.exact[tool]; ok {
		return c
	}
	for i := range cs.globs {
		if cs.globs[i].g.match(tool) {
			return cs.globs[i].c
		}
	}
	return nil
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
		if !isGlobKey(name) {
			cs.exact[name] = c
			continue
		}
		if err := checkGlob(name); err != nil {
			return cs, at(fail(err.Error(), "tools", name))
		}
		if !utf8.ValidString(name) {
			return cs, at(fail(fmt.Sprintf("glob %q is not valid UTF-8", name), "tools", name))
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
func (p *Policy) contractFor(server, tool string) *contract {
	if cs, ok := p.servers[server]; ok {
		if c := cs.lookup(tool); c != nil {
			return c
		}
	}
	if c := p.contracts.lookup(tool); c != nil {
		return c
	}
	return noContract
}

// globWitness returns a tool name both globs match, if one exists, by
// walking the two patterns in step: every step moves one of them on, so
// the walk ends, and a state that failed once fails again.
func globWitness(a, b string) (string, bool) {
	pa, pb := globTokens(a), globTokens(b)
	failed := map[[2]int]bool{}
	star := func(t globToken) bool { return t.kind == tokStar || t.kind == tokStars }
	// takes tells whether token t can take character r (which a literal
	// or a ? of the other glob produces) and stay where it is.
	takes := func(t globToken, r rune) bool { return t.kind == tokStars || (t.kind == tokStar && r != '/') }
	var walk func(i, j int) ([]rune, bool)
	walk = func(i, j int) ([]rune, bool) {
		if i == len(pa) && j == len(pb) {
			return nil, true
		}
		if failed[[2]int{i, j}] {
			return nil, false
		}
		then := func(r rune, ni, nj int) ([]rune, bool) {
			w, ok := walk(ni, nj)
			if !ok {
				return nil, false
			}
			if r < 0 {
				return w, true
			}
			return append([]rune{r}, w...), true
		}
		if i < len(pa) && star(pa[i]) {
			if w, ok := then(-1, i+1, j); ok {
				return w, true
			}
		}
		if j < len(pb) && star(pb[j]) {
			if w, ok := then(-1, i, j+1); ok {
				return w, true
			}
		}
		if i < len(pa) && j < len(pb) && !(star(pa[i]) && star(pb[j])) {
			ta, tb := pa[i], pb[j]
			var w []rune
			ok := false
			switch {
			case star(ta):
				if r := produce(tb); takes(ta, r) {
					w, ok = then(r, i, j+1)
				}
			case star(tb):
				if r := produce(ta); takes(tb, r) {
					w, ok = then(r, i+1, j)
				}
			case ta.kind == tokRune && tb.kind == tokRune:
				if ta.r == tb.r {
					w, ok = then(ta.r, i+1, j+1)
				}
			case ta.kind == tokRune:
				if ta.r != '/' {
					w, ok = then(ta.r, i+1, j+1)
				}
			case tb.kind == tokRune:
				if tb.r != '/' {
					w, ok = then(tb.r, i+1, j+1)
				}
			default:
				w, ok = then('x', i+1, j+1)
			}
			if ok {
				return w, true
			}
		}
		failed[[2]int{i, j}] = true
		return nil, false
	}
	w, ok := walk(0, 0)
	return string(w), ok
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
