package engine

import (
	"bytes"
	"fmt"
	"io"

	"gopkg.in/yaml.v3"
)

// ImportBouncer converts an mcp-bouncer policy (tool names at the top
// level, each with bouncer's contract keys) into a bailiff policy file.
// bouncer forwards every call its contracts do not stop, so the result
// has one explicit, named allow-all rule ahead of bailiff's default deny;
// the contracts carry over key for key. The result is compiled before it
// is returned, so a bouncer file with a bad regex or a relative prefix is
// refused with its own file and line.
func ImportBouncer(name string, data []byte) (*File, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, yamlError(name, nil, err)
	}
	if root.Kind == 0 || len(root.Content) == 0 {
		return nil, &LoadError{File: name, Reason: "empty mcp-bouncer policy"}
	}
	if root.Content[0].Kind != yaml.MappingNode {
		return nil, &LoadError{File: name, Line: root.Content[0].Line, Reason: "an mcp-bouncer policy maps tool names to contracts"}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	tools := map[string]*Contract{}
	if err := dec.Decode(&tools); err != nil {
		return nil, yamlError(name, nil, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err != io.EOF {
		return nil, &LoadError{File: name, Line: extra.Line, Reason: "more than one YAML document"}
	}
	for k, c := range tools {
		if c == nil {
			tools[k] = &Contract{}
		}
	}
	f := &File{
		Version: FormatVersion,
		Name:    "imported from mcp-bouncer " + name,
		Rules: []RuleSpec{{
			ID:     BouncerAllowAll,
			Tool:   "*",
			Action: "allow",
			Reason: "mcp-bouncer forwards every call its contracts do not stop",
		}},
		Tools: tools,
	}
	if _, ce := compileFile(f); ce != nil {
		keys := ce.keys
		if len(keys) > 0 && keys[0] == "tools" {
			keys = keys[1:]
		}
		return nil, &LoadError{File: name, Line: lineOf(&root, keys...), Reason: ce.reason}
	}
	return f, nil
}

// BouncerAllowAll is the id of the rule an imported bouncer policy gets.
const BouncerAllowAll = "bouncer-allow-all"

// MarshalFile writes a policy file as YAML, with a header comment.
func MarshalFile(f *File, header string) ([]byte, error) {
	var buf bytes.Buffer
	for _, l := range splitLines(header) {
		fmt.Fprintf(&buf, "# %s\n", l)
	}
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(f); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	var out []string
	for _, l := range bytes.Split([]byte(s), []byte("\n")) {
		out = append(out, string(l))
	}
	return out
}
