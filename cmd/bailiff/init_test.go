package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInitRefusesGoRunBuild: a binary go run built lies in a go-build
// temporary directory deleted when it exits, so init does not write it
// into a client config.
func TestInitRefusesGoRunBuild(t *testing.T) {
	t.Setenv("USER", "ana")
	dir := t.TempDir()
	exe := filepath.Join(dir, "go-build2214", "b001", "exe", "bailiff")
	if err := os.MkdirAll(filepath.Dir(exe), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(exe, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "bailiff")
	if err := os.Symlink(exe, link); err != nil {
		t.Fatal(err)
	}
	defer func(f func() (string, error)) { executable = f }(executable)
	executable = func() (string, error) { return link, nil }

	config := filepath.Join(dir, "mcp.json")
	orig := []byte(`{"mcpServers": {"fs": {"command": "npx"}}}`)
	if err := os.WriteFile(config, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := run([]string{"init", "--config", config, "--audit-dir", dir, "--yes"}, nil, &out, &errb)
	if code != exitUsage {
		t.Fatalf("exit %d, want %d; stdout: %s", code, exitUsage, out.String())
	}
	want := "bailiff: error: bailiff is running from " + exe + ", a binary 'go run' built, which Go deletes when it exits or trims its build cache\n" +
		"bailiff: hint: go install ./cmd/bailiff and run init with the installed bailiff, or name the command with --bailiff PATH\n"
	if errb.String() != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", errb.String(), want)
	}
	if b, _ := os.ReadFile(config); !bytes.Equal(b, orig) {
		t.Errorf("config changed:\n%s", b)
	}

	// Anywhere else, the resolved path is what the client starts.
	real := filepath.Join(dir, "bin", "bailiff")
	os.MkdirAll(filepath.Dir(real), 0o755)
	os.WriteFile(real, nil, 0o755)
	os.Remove(link)
	os.Symlink(real, link)
	out.Reset()
	errb.Reset()
	if code := run([]string{"init", "--config", config, "--audit-dir", dir, "--yes"}, nil, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if b, _ := os.ReadFile(config); !strings.Contains(string(b), `"command":"`+real+`"`) {
		t.Errorf("config does not start %s:\n%s", real, b)
	}
}

func TestGoBuildTemp(t *testing.T) {
	for path, want := range map[string]bool{
		"/tmp/go-build3345/b001/exe/bailiff":     true,
		"/home/u/go-build/bailiff":               false,
		"/tmp/go-buildx/bailiff":                 false,
		"/home/u/go/bin/bailiff":                 false,
		"/var/tmp/gotmp/go-build1/b001/exe/main": true,
		"/usr/local/bin/go-build2-tools/bailiff": false,
		// Since Go 1.24 go run keeps its binaries in the build cache.
		"/root/.cache/go-build/48/4d3f0c2b9e8a7f6e5d4c3b2a1908f7e6d5c4b3a29180f7e6d5c4b3a2918f7e6d-d/bailiff": true,
		"/home/u/.cache/go-build/48/notahash-d/bailiff":                                                       false,
		"/home/u/go-build/ab/x/bailiff":                                                                       false,
	} {
		if got := goBuildTemp(path); got != want {
			t.Errorf("goBuildTemp(%q) = %v, want %v", path, got, want)
		}
	}
}
