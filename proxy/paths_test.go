package proxy

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// symlinkTree makes root/{public,private} with public/cache -> ../private,
// public/alias -> inner (inside public), public/dangle -> ../private/new.txt
// (dangling) and public/secret.txt -> ../private/secret.txt.
func symlinkTree(t *testing.T) string {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"public/inner", "private"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "private", "secret.txt"), []byte("secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"cache": "../private", "alias": "inner", "dangle": "../private/new.txt", "secret.txt": "../private/secret.txt"} {
		if err := os.Symlink(target, filepath.Join(root, "public", link)); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestResolvePath(t *testing.T) {
	root := symlinkTree(t)
	pub, priv := filepath.Join(root, "public"), filepath.Join(root, "private")
	for _, c := range []struct{ in, want string }{
		{pub + "/cache/x.txt", priv + "/x.txt"},
		{pub + "/cache/a/b/c.txt", priv + "/a/b/c.txt"},
		{pub + "/cache/../public/y.txt", pub + "/y.txt"}, // ".." leaves the link's target, not the link
		{pub + "/alias/y.txt", pub + "/inner/y.txt"},
		{pub + "/dangle", priv + "/new.txt"},
		{pub + "/secret.txt", priv + "/secret.txt"},
		{pub + "/./new/z.txt", pub + "/new/z.txt"},
		{"relative/cache/x", "relative/cache/x"},
	} {
		got, err := resolvePath(c.in)
		if err != nil || got != c.want {
			t.Errorf("resolvePath(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	if got, err := resolvePath(pub + "/new/../cache/x"); err == nil {
		t.Errorf("a \"..\" after a missing directory resolved to %q, want an error", got)
	}
	loop := filepath.Join(root, "loop")
	if err := os.Symlink("loop", loop); err != nil {
		t.Fatal(err)
	}
	if got, err := resolvePath(loop + "/x"); err == nil {
		t.Errorf("a symlink loop resolved to %q, want an error", got)
	}
}

// TestSymlinkEscape: with public/cache -> ../private, the real filesystem
// server is never asked to write under public/cache (or through any other
// link out of public); a write through a link that stays inside public
// lands where the check looked. The log records the resolved paths and
// verifies.
func TestSymlinkEscape(t *testing.T) {
	server := peer(t, "@modelcontextprotocol/server-filesystem/dist/index.js")
	root := symlinkTree(t)
	pub, priv := filepath.Join(root, "public"), filepath.Join(root, "private")
	policy := fmt.Sprintf(`version: 1
packs: [filesystem]
rules:
  - {id: write, tool: write_file, action: allow}
  - {id: move, tool: move_file, action: allow}
tools:
  write_file:
    allowed_path_prefixes: [%[1]s]
  move_file:
    allowed_path_prefixes: [%[1]s]
`, pub)
	s := start(t, setup{policy: policy, server: "fs", command: []string{"node", server, root}})
	for _, p := range []string{pub + "/cache/x.txt", pub + "/dangle", pub + "/secret.txt", pub + "/alias/../cache/y.txt"} {
		r := s.call("write_file", map[string]any{"path": p, "content": "pwned"})
		if !r.IsError || !strings.Contains(text(r), "check path") || !strings.Contains(text(r), priv) {
			t.Errorf("write to %s: %v %q, want a path refusal naming the resolved path", p, r.IsError, text(r))
		}
	}
	r := s.call("move_file", map[string]any{"source": pub + "/inner", "destination": pub + "/cache/stolen"})
	if !r.IsError || !strings.Contains(text(r), "check path") {
		t.Errorf("move into the link: %v %q, want a path refusal", r.IsError, text(r))
	}
	r = s.call("write_file", map[string]any{"path": pub + "/alias/ok.txt", "content": "fine"})
	if r.IsError {
		t.Errorf("write through a link inside public: %q", text(r))
	}
	r = s.call("write_file", map[string]any{"path": pub + "/new/../cache/z.txt", "content": "pwned"})
	if !r.IsError || !strings.Contains(text(r), "cannot be resolved") {
		t.Errorf("write with .. after a missing directory: %v %q, want a refusal", r.IsError, text(r))
	}

	rep := s.verify()
	entries, err := os.ReadDir(priv)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("private holds %d entries, want only secret.txt: a refused write reached it", len(entries))
	}
	if b, err := os.ReadFile(filepath.Join(priv, "secret.txt")); err != nil || string(b) != "secret\n" {
		t.Errorf("private/secret.txt was changed: %q %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(pub, "inner", "ok.txt")); err != nil || string(b) != "fine" {
		t.Errorf("the allowed write did not land in public/inner: %q %v", b, err)
	}
	if rep.Calls != 6 {
		t.Errorf("the log holds %d calls, want 6 (the unresolvable one is malformed)", rep.Calls)
	}

	// The record of the allowed write holds the path decided on and
	// forwarded, and what the client sent.
	found := false
	f, err := os.Open(s.log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var rec struct {
			Kind     string            `json:"kind"`
			Verdict  string            `json:"verdict"`
			Args     map[string]any    `json:"args"`
			Resolved map[string]string `json:"resolved"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatal(err)
		}
		if rec.Kind == "call" && rec.Verdict == "allow" {
			found = true
			if rec.Args["path"] != pub+"/inner/ok.txt" || rec.Resolved["path"] != pub+"/alias/ok.txt" {
				t.Errorf("allowed call recorded args %v resolved %v", rec.Args, rec.Resolved)
			}
		}
	}
	if !found {
		t.Error("no allowed call in the log")
	}
}

// TestGatewaySymlinkEscape: a gateway resolves the paths of its command
// upstreams too.
func TestGatewaySymlinkEscape(t *testing.T) {
	server := peer(t, "@modelcontextprotocol/server-filesystem/dist/index.js")
	root := symlinkTree(t)
	pub, priv := filepath.Join(root, "public"), filepath.Join(root, "private")
	policy := fmt.Sprintf("version: 1\npacks: [filesystem]\nrules:\n  - {id: write, tool: write_file, action: allow}\ntools:\n  write_file:\n    allowed_path_prefixes: [%s]\n", pub)
	s := startGateway(t, policy, []Upstream{{Name: "fs", Cmd: exec.Command("node", server, root)}})
	r := s.call("fs.write_file", map[string]any{"path": pub + "/cache/x.txt", "content": "pwned"})
	if !r.IsError || !strings.Contains(text(r), "check path") {
		t.Errorf("write through the link: %v %q, want a path refusal", r.IsError, text(r))
	}
	if r := s.call("fs.write_file", map[string]any{"path": pub + "/alias/ok.txt", "content": "fine"}); r.IsError {
		t.Errorf("write through a link inside public: %q", text(r))
	}
	s.verify()
	if _, err := os.Stat(filepath.Join(priv, "x.txt")); err == nil {
		t.Error("the refused write reached private")
	}
	if _, err := os.Stat(filepath.Join(pub, "inner", "ok.txt")); err != nil {
		t.Errorf("the allowed write did not land: %v", err)
	}
}
