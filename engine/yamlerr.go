package engine

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// YAMLError says a strict YAML decoder's error about the file name (which
// holds data) as policy errors are said: file:line: the key, what it wants
// and what it got, or the unknown key.
func YAMLError(name string, data []byte, err error) error {
	var root yaml.Node
	if yaml.Unmarshal(data, &root) != nil {
		return yamlError(name, nil, err)
	}
	return yamlError(name, &root, err)
}

// yamlError turns yaml.v3's messages into file:line: reason. root, if
// set, is the file's node tree, to name the key a wrong type is under.
func yamlError(name string, root *yaml.Node, err error) error {
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg := te.Errors[0]
		line := 0
		if m := yamlLine.FindStringSubmatch(msg); m != nil {
			line, _ = strconv.Atoi(m[1])
			msg = m[2]
		}
		if m := notFound.FindStringSubmatch(msg); m != nil {
			msg = fmt.Sprintf("unknown key %q", m[1])
		} else if m := wrongType.FindStringSubmatch(msg); m != nil {
			msg = wrongTypeReason(root, line, m[1], m[3], m[4])
		}
		return &LoadError{File: name, Line: line, Reason: msg}
	}
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	}
	return &LoadError{File: name, Line: line, Reason: msg}
}

var wrongType = regexp.MustCompile("^cannot unmarshal !!(\\w+)( `(.*)`)? into (.+)$")

// wrongTypeReason says in plain words what yaml.v3's "cannot unmarshal
// !!str `1` into int" means: which key wants what, and what it got.
func wrongTypeReason(root *yaml.Node, line int, tag, value, into string) string {
	got := map[string]string{"str": "text", "int": "a number", "float": "a number", "bool": "true or false",
		"seq": "a list", "map": "a mapping", "null": "nothing"}[tag]
	if got == "" {
		got = "!!" + tag
	}
	if value != "" {
		got += " " + strconv.Quote(value)
	}
	want := "a mapping"
	switch {
	case strings.HasPrefix(into, "[]"):
		want = "a list"
	case strings.HasPrefix(into, "int"), strings.HasPrefix(into, "uint"):
		want = "a whole number"
	case strings.HasPrefix(into, "float"):
		want = "a number"
	case into == "bool":
		want = "true or false"
	case into == "string":
		want = "text"
	}
	if key := keyAt(root, line, "!!"+tag, value); key != "" {
		return fmt.Sprintf("%s wants %s, not %s", key, want, got)
	}
	return fmt.Sprintf("wants %s, not %s", want, got)
}

// keyAt is the key of the value on line with the given tag (and, for a
// scalar, text), or "" when none is found.
func keyAt(n *yaml.Node, line int, tag, value string) string {
	if n == nil {
		return ""
	}
	// Deepest first: a list's value starts on the line of its first item.
	for i, c := range n.Content {
		if k := keyAt(c, line, tag, value); k != "" {
			return k
		}
		if n.Kind == yaml.MappingNode && i%2 == 1 && c.Line == line && c.Tag == tag && (value == "" || c.Value == value) {
			return n.Content[i-1].Value
		}
	}
	return ""
}

// lineOf finds the line of the YAML node at a path of keys and indexes
// ("rules", 2, "when", 0, "regex"), falling back to the deepest node found.
func lineOf(root *yaml.Node, keys ...any) int {
	if root == nil {
		return 0
	}
	n := root
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := n.Line
	for _, k := range keys {
		var next *yaml.Node
		switch k := k.(type) {
		case string:
			if n.Kind == yaml.MappingNode {
				for i := 0; i+1 < len(n.Content); i += 2 {
					if n.Content[i].Value == k {
						next = n.Content[i+1]
						line = n.Content[i].Line
						break
					}
				}
			}
		case int:
			if n.Kind == yaml.SequenceNode && k < len(n.Content) {
				next = n.Content[k]
			}
		}
		if next == nil {
			return line
		}
		n = next
		line = n.Line
	}
	return line
}
