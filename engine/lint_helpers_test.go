package engine

import (
	"strings"
	"testing"
)

// lintNames lints a policy file given the names of the listed tools only
// (nil: no listing), as most lint tests need.
func lintNames(name string, data []byte, tools []string) ([]Finding, error) {
	var listed []ListedTool
	if tools != nil {
		listed = []ListedTool{}
	}
	for _, t := range tools {
		listed = append(listed, ListedTool{Name: t})
	}
	return lintListed(name, data, listed)
}

// TestLintWithoutSource: a policy not loaded from a file lints its
// canonical form, rather than an empty text that does not load.
func TestLintWithoutSource(t *testing.T) {
	f, _, err := decodeFile("p.yaml", []byte("version: 1\nrules:\n  - {id: a, tool: x, action: allow}\n  - {id: b, tool: x, action: deny}\n"))
	if err != nil {
		t.Fatal(err)
	}
	p, ce := compileFile(f)
	if ce != nil {
		t.Fatal(ce.reason)
	}
	found, err := p.Lint(nil)
	if err != nil || len(found) != 1 || found[0].Kind != lintShadowed || !strings.HasPrefix(found[0].File, "canonical policy sha256:") {
		t.Errorf("Lint = %+v, %v; want one shadowed-rule finding in the canonical form", found, err)
	}
}
