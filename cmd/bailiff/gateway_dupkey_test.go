package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGatewayConfigRefusesDuplicateKeys: gateway.yaml is YAML, and
// yaml.v3 already refuses a mapping key given twice, at the top and
// nested; this keeps it so (a config read as its last value by bailiff
// and its first by a reviewer's tool would say two things).
func TestGatewayConfigRefusesDuplicateKeys(t *testing.T) {
	dir := t.TempDir()
	for name, c := range map[string]struct{ config, want string }{
		"top level": {"policy: a.yaml\npolicy: b.yaml\nservers:\n  fs: {command: x}\n", `"policy" already defined`},
		"nested":    {"servers:\n  fs:\n    command: x\n    env: {HOME: /a, HOME: /b}\n", `"HOME" already defined`},
	} {
		f := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".yaml")
		if err := os.WriteFile(f, []byte(c.config), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := loadGatewayConfig(nil, f); err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), f) {
			t.Errorf("%s: %v, want the file and %s", name, err, c.want)
		}
	}
}
