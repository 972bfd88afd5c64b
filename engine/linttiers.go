package engine

import (
	"strings"

	"gopkg.in/yaml.v3"
)

// The kinds of lint finding on provenance tiers.
const (
	lintFirstPartyWide    = "first-party-loosens"
	lintFirstPartyUnused  = "first-party-no-source"
	lintListingFetches    = "listing-fetches"
	lintFirstPartyTrusted = "first-party-trusted"
)

// lintTiers points out where a tier setting loosens the taint check more
// than it says: a first-party entry that takes in a tool reading
// strangers' pages, or every tool; a listing that fetches pages; and
// settings that cannot act.
func lintTiers(add func(int, string, string, string, ...any), root *yaml.Node, f *File, pol *Policy) {
	for i, s := range pol.first {
		line := lineOf(root, "first_party", i)
		subject := s.Server + "/" + s.Tool
		if s.Tool == "*" || s.Tool == "**" {
			add(line, lintFirstPartyWide, subject, "first_party names every tool%s: no output is third-party, so a stranger's page or mail that plants a destination is only asked about, never denied", onServer(s))
			continue
		}
		for _, sec := range sections(f, pol) {
			for _, tool := range sortedKeys(sec.tools) {
				c := sec.tools[tool]
				if c.Fetches == "" && !c.Lists || !globsMeet(s.Tool, tool) || sec.server != "" && !matchGlob(s.Server, sec.server) {
					continue
				}
				what := "fetches pages"
				if c.Fetches == "" {
					what = "lists search results"
				}
				add(line, lintFirstPartyWide, subject, "first_party takes in %s, which %s: what a stranger's page says would count as the user's own records, and a destination planted there would be asked about instead of denied", tool, what)
			}
		}
		for _, t := range pol.sources {
			if globsMeet(t.Tool, s.Tool) && globsMeet(t.Server, s.Server) {
				add(line, lintFirstPartyTrusted, subject, "first_party %s meets trusted_sources %s/%s: output of a tool both name is trusted and does not taint at all, so the first-party tier never applies to it", subject, t.Server, t.Tool)
				break
			}
		}
	}
	for _, sec := range sections(f, pol) {
		for _, tool := range sortedKeys(sec.tools) {
			c := sec.tools[tool]
			line := lineOf(root, append(sec.keys, tool)...)
			if c.OnFirstParty != "" && len(pol.first) == 0 {
				add(line, lintFirstPartyUnused, tool, "%s sets on_first_party, but the policy names no first_party source: no output is first-party, so it decides nothing itself (an unset on_self_published still follows it)", tool)
			}
			if c.Lists && c.Fetches != "" {
				add(line, lintListingFetches, tool, "%s lists search results and fetches pages: a page it reads would be set aside as a listing whenever another output holds the same destination", tool)
			}
		}
	}
}

func onServer(s SourceSpec) string {
	if s.Server == "*" || s.Server == "" {
		return ""
	}
	return " on " + s.Server
}

// globsMeet tells whether some name matches both globs.
func globsMeet(a, b string) bool {
	if !strings.ContainsAny(a, "*?") {
		return matchGlob(b, a)
	}
	if !strings.ContainsAny(b, "*?") {
		return matchGlob(a, b)
	}
	_, ok := globWitness(a, b)
	return ok
}
