package engine

import (
	"fmt"

	"gopkg.in/yaml.v3"
)

// fraction finds a count written with a fraction (max_calls: 1.5). The
// decoder would truncate it into the int without a word, and a policy
// must load as written or not at all.
func fraction(root *yaml.Node) *LoadError {
	if root.Kind == yaml.DocumentNode && len(root.Content) > 0 {
		root = root.Content[0]
	}
	check := func(contract *yaml.Node, keys ...string) *LoadError {
		for _, k := range keys {
			if v := valueOf(contract, k); v != nil && v.Kind == yaml.ScalarNode && v.Tag == "!!float" {
				return &LoadError{Line: v.Line, Reason: fmt.Sprintf("%s wants a whole number, not %s", k, v.Value)}
			}
		}
		return nil
	}
	each := func(m *yaml.Node, f func(*yaml.Node) *LoadError) *LoadError {
		if m == nil || m.Kind != yaml.MappingNode {
			return nil
		}
		for i := 1; i < len(m.Content); i += 2 {
			if err := f(deref(m.Content[i])); err != nil {
				return err
			}
		}
		return nil
	}
	contracts := func(m *yaml.Node) *LoadError {
		return each(m, func(c *yaml.Node) *LoadError { return check(c, "max_calls", "cost") })
	}
	if err := contracts(valueOf(root, "tools")); err != nil {
		return err
	}
	if err := each(valueOf(root, "servers"), contracts); err != nil {
		return err
	}
	return each(valueOf(root, "tenants"), func(t *yaml.Node) *LoadError { return check(t, "ceiling") })
}

// valueOf is the value under key in mapping m, nil for none.
func valueOf(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return deref(m.Content[i+1])
		}
	}
	return nil
}
