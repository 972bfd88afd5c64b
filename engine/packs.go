package engine

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// The built-in packs name the sending and writing tools of common MCP
// servers, so a policy can say `packs: [mail]` instead of spelling out
// which arguments are destinations and which are paths.
//
//go:embed packs/*.yaml
var packFS embed.FS

// packNames lists the built-in pack names.
func packNames() []string {
	ents, _ := packFS.ReadDir("packs")
	var names []string
	for _, e := range ents {
		names = append(names, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	sort.Strings(names)
	return names
}

// packText returns the text of a built-in pack.
func packText(name string) ([]byte, error) {
	b, err := packFS.ReadFile("packs/" + name + ".yaml")
	if err != nil {
		return nil, fmt.Errorf("no built-in pack %q (known: %s)", name, strings.Join(packNames(), ", "))
	}
	return b, nil
}

// expandPacks merges the named packs' tool contracts into a copy of f. A
// contract the policy writes itself wins field by field, so a policy can
// add allowed_path_prefixes to the filesystem pack's write_params.
func expandPacks(f *File) (*File, *compileErr) {
	if len(f.Packs) == 0 {
		return f, nil
	}
	out := *f
	out.Tools = map[string]*Contract{}
	for k, v := range f.Tools {
		out.Tools[k] = v
	}
	for i, name := range f.Packs {
		text, err := packText(name)
		if err != nil {
			return nil, fail(err.Error(), "packs", i)
		}
		pf, _, err := decodeFile("pack "+name, text)
		if err != nil {
			return nil, fail(fmt.Sprintf("built-in pack %s: %v", name, err), "packs", i)
		}
		for _, tool := range sortedKeys(pf.Tools) {
			out.Tools[tool] = mergeContract(pf.Tools[tool], out.Tools[tool])
		}
	}
	out.Packs = nil
	return &out, nil
}

// mergeContract lays over on top of base: every field over sets wins.
func mergeContract(base, over *Contract) *Contract {
	if over == nil {
		c := *base
		return &c
	}
	c := *base
	if over.Exfiltrating != nil {
		c.Exfiltrating = over.Exfiltrating
	}
	if over.SinkParams != nil {
		c.SinkParams = over.SinkParams
	}
	if over.TrustedDestinations != nil {
		c.TrustedDestinations = over.TrustedDestinations
	}
	if over.OnTaint != "" {
		c.OnTaint = over.OnTaint
	}
	if over.WriteParams != nil {
		c.WriteParams = over.WriteParams
	}
	if over.AllowedPathPrefixes != nil {
		c.AllowedPathPrefixes = over.AllowedPathPrefixes
	}
	if over.MaxCalls != nil {
		c.MaxCalls = over.MaxCalls
	}
	if over.ArgPatterns != nil {
		c.ArgPatterns = over.ArgPatterns
	}
	if over.Fetches != "" {
		c.Fetches = over.Fetches
	}
	if over.OnSelfPublished != "" {
		c.OnSelfPublished = over.OnSelfPublished
	}
	if over.OnFirstParty != "" {
		c.OnFirstParty = over.OnFirstParty
	}
	if over.Lists {
		c.Lists = true
	}
	if over.NotDestinations != nil {
		c.NotDestinations = over.NotDestinations
	}
	return &c
}

// packContract reports whether c is exactly the contract a built-in pack
// gives tool.
func packContract(tool string, c *Contract) bool {
	want, err := json.Marshal(c)
	if err != nil {
		return false
	}
	for _, name := range packNames() {
		text, err := packText(name)
		if err != nil {
			continue
		}
		pf, _, err := decodeFile("pack "+name, text)
		if err != nil || pf.Tools[tool] == nil {
			continue
		}
		if got, err := json.Marshal(pf.Tools[tool]); err == nil && bytes.Equal(got, want) {
			return true
		}
	}
	return false
}
