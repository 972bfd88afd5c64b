package demo

import (
	"os"
	"path/filepath"
	"testing"
)

// TestInside: the demo server's guard resolves paths as the file system
// does. A symlink on the way out of the demo directory, or at the end of
// the path, is refused like a "..".
func TestInside(t *testing.T) {
	root := t.TempDir()
	l := Layout{Dir: filepath.Join(root, "office")}
	if err := Setup(l); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(root, "outside")
	if err := os.Mkdir(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(l.Workspace(), "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "f"), filepath.Join(l.Workspace(), "leaf")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"link/pwned.txt", "leaf", "../../outside/x", filepath.Join(outside, "x"), "/etc/passwd", l.Dir} {
		if got, err := l.inside(p); err == nil {
			t.Errorf("inside(%q) = %q, want a refusal", p, got)
		}
	}
	for _, p := range []string{"q3-report.md", filepath.Join(l.Workspace(), "new.md"), "../.bashrc"} {
		if _, err := l.inside(p); err != nil {
			t.Errorf("inside(%q): %v", p, err)
		}
	}
}
