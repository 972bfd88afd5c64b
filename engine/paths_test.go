package engine

import (
	"errors"
	"strings"
	"testing"
)

// TestResolvePaths: only the confined arguments are rewritten (a list's
// elements one by one), the input is not changed, and a resolver error
// stops it.
func TestResolvePaths(t *testing.T) {
	p, err := Load("p", []byte(`version: 1
rules: []
tools:
  move:
    write_params: [source, dest.paths]
`))
	if err != nil {
		t.Fatal(err)
	}
	up := func(s string) (string, error) { return strings.ToUpper(s), nil }
	args := map[string]any{"source": "/a", "other": "/b", "dest": map[string]any{"paths": []any{"/c", json1(), "/D"}}}
	out, from, err := p.ResolvePaths(ToolRef{Tool: "move"}, args, up)
	if err != nil {
		t.Fatal(err)
	}
	if got := CanonicalJSON(out); string(got) != `{"dest":{"paths":["/C",1,"/D"]},"other":"/b","source":"/A"}` {
		t.Errorf("resolved args %s", got)
	}
	if len(from) != 2 || from["source"] != "/a" || from["dest.paths[0]"] != "/c" {
		t.Errorf("resolved from %v", from)
	}
	if args["source"] != "/a" || args["dest"].(map[string]any)["paths"].([]any)[0] != "/c" {
		t.Errorf("the input changed: %v", args)
	}
	if out, from, _ := p.ResolvePaths(ToolRef{Tool: "other"}, args, up); from != nil || out["source"] != "/a" {
		t.Errorf("a tool without a path contract was rewritten: %v %v", out, from)
	}
	if _, _, err := p.ResolvePaths(ToolRef{Tool: "move"}, args, func(string) (string, error) { return "", errors.New("no") }); err == nil {
		t.Error("a resolver error was ignored")
	}
	if !HasPath(out, "dest.paths[2]") || HasPath(out, "dest.paths[3]") || HasPath(out, "[") {
		t.Error("HasPath")
	}
}

func json1() any { v, _ := DecodeJSON([]byte("1")); return v }
