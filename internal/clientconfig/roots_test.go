package clientconfig

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestWritableRoots: a server's roots are the existing paths its command
// names (as --flag=PATH too, and ~ as the home directory), and with a
// shell script every absolute path in it, existing or not: the script
// hides which it hands the server.
func TestWritableRoots(t *testing.T) {
	dir := t.TempDir()
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o700); err != nil {
		t.Fatal(err)
	}
	home, _ := os.UserHomeDir()
	paths := func(ws []Writable) []string {
		var out []string
		for _, w := range ws {
			out = append(out, w.Path)
		}
		return out
	}
	for _, c := range []struct {
		name    string
		command []string
		want    []string
		not     []string
	}{
		{"argument", []string{"npx", "server-filesystem", "work"}, []string{work}, nil},
		{"flag value", []string{"srv", "--root=" + work}, []string{work}, nil},
		{"missing path", []string{"srv", filepath.Join(dir, "nope")}, nil, []string{filepath.Join(dir, "nope")}},
		{"shell script", []string{"bash", "-lc", "cd /srv/hidden && exec srv ~/notes"}, []string{"/srv/hidden", filepath.Join(home, "notes")}, nil},
		{"env then shell", []string{"env", "A=1", "sh", "-c", "srv /data"}, []string{"/data"}, nil},
		{"not a shell", []string{"python", "-c", "srv /data"}, nil, []string{"/data"}},
	} {
		got := paths(WritableRoots("s", dir, c.command))
		for _, w := range c.want {
			if !slices.Contains(got, w) {
				t.Errorf("%s: roots %v, want %s among them", c.name, got, w)
			}
		}
		for _, n := range c.not {
			if slices.Contains(got, n) {
				t.Errorf("%s: roots %v hold %s", c.name, got, n)
			}
		}
	}
	if !Within(filepath.Join(work, "a"), work) || Within(dir, work) || Within(work+"x", work) {
		t.Error("Within is not a path prefix by components")
	}
}
