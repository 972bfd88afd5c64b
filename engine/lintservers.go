package engine

import (
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// lintUnserved is the kind of finding for a server lint was told of that
// the policy has no allow or ask rule for.
const lintUnserved = "no-rule-for-server"

// listing is what lint was told of the servers: the tools they list, each
// with the server that lists it ("" when lint was not told which). nil
// tools: lint was told nothing, and judges no rule by what is listed.
type listing struct{ tools []ListedTool }

func (l listing) known() bool { return l.tools != nil }

// names are the listed tools' names, for the checks that judge tools
// alone.
func (l listing) names() []string {
	if l.tools == nil {
		return nil
	}
	out := []string{}
	for _, t := range l.tools {
		out = append(out, t.Name)
	}
	return out
}

// servers are the servers lint was told of, sorted.
func (l listing) servers() []string {
	var out []string
	for _, t := range l.tools {
		if t.Server != "" {
			out = append(out, t.Server)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// offers tells whether some listed tool is on a server the server glob
// matches and has a name the tool glob matches.
func (l listing) offers(server, tool string) bool {
	for _, t := range l.tools {
		if (t.Server == "" || matchName(server, t.Server)) && matchName(tool, t.Name) {
			return true
		}
	}
	return false
}

// unmatched says why a rule matches no listed tool, or "" when one does
// (or lint was told of no tools).
func (l listing) unmatched(r RuleSpec) string {
	server := r.Server
	if server == "" {
		server = "*"
	}
	if !l.known() || l.offers(server, r.Tool) {
		return ""
	}
	if servers := l.servers(); len(servers) > 0 && !slices.ContainsFunc(servers, func(s string) bool { return matchName(server, s) }) {
		return fmt.Sprintf("its server %q is none of the servers linted (%s)", server, strings.Join(servers, ", "))
	}
	return fmt.Sprintf("no listed tool matches %q", r.Tool)
}

// unoffered says why a contract for tool in a servers: section (server
// "" for the top-level tools:) applies to no listed tool, or "" when it
// does (or lint was told of no tools).
func (l listing) unoffered(server, tool string) string {
	if !l.known() || l.offers(orStar(server), tool) {
		return ""
	}
	if servers := l.servers(); server != "" && len(servers) > 0 && !slices.Contains(servers, server) {
		return fmt.Sprintf("on server %s, which is none of the servers linted (%s)", server, strings.Join(servers, ", "))
	}
	return "which no listed server offers"
}

// lintServers finds each server lint was told of that the policy would
// deny every call to.
func lintServers(add func(int, string, string, string, ...any), root *yaml.Node, pol *Policy, l listing) {
	for _, s := range l.servers() {
		if !pol.Serves(s) {
			add(lineOf(root, "rules"), lintUnserved, s, "no rule allows or asks for server %s: every call to it will be denied", s)
		}
	}
}

// orStar is a servers: section's server, or every server for the
// top-level tools: section.
func orStar(server string) string {
	if server == "" {
		return "*"
	}
	return server
}
