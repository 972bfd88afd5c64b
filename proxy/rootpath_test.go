package proxy

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A client root spelled with a backslash named, to the screen, a "state\keys"
// directory that does not exist, and to server-filesystem (Node's
// fileURLToPath, where '\' is '/') the directory holding the approver's
// key: the root was kept, and read_text_file returned the key. Every
// spelling of a protected directory but its canonical path is withheld.
func TestRootSpellingsOfAProtectedDirAreWithheld(t *testing.T) {
	home := t.TempDir()
	state := filepath.Join(home, "state")
	keys := filepath.Join(state, "keys")
	mkdirs(t, keys, filepath.Join(home, "ws"))
	p := &Proxy{opt: Options{Protected: []string{keys}}}
	for _, uri := range []string{
		"file://" + state + `\keys`,
		"file://" + home + `\state\keys`,
		"file://" + home + `/state/x/..\keys`,
		"file://" + home + "/state/%6beys",
		"file://" + home + "/state%2fkeys",
		"file://" + home + "/state/%2e/keys",
		"file://" + home + "/ws/%2e%2e/state/keys",
		"file://" + home + "/ws/../state/keys",
		"file://" + home + "//state/keys",
		"file://" + home + "/state/keys?x",
		"file://" + home + "/state/keys#x",
		"file://localhost" + keys,
		"file://evil.example" + keys,
		home + `/state\keys`,
		home + "/ws/../state/keys",
		"file://" + keys,
		"file://" + state,
		"file://" + home,
	} {
		if why := p.protectedRoot(uri); why == "" {
			t.Errorf("root %q kept; it names %s to server-filesystem", uri, nodeRootPath(t, uri))
		}
	}
	for _, uri := range []string{"file://" + filepath.Join(home, "ws"), "file://" + filepath.Join(home, "ws") + "/", filepath.Join(home, "ws")} {
		if why := p.protectedRoot(uri); why != "" {
			t.Errorf("root %q withheld (%s); it holds nothing protected", uri, why)
		}
	}
}

// Every root the screen keeps names, to Node's fileURLToPath (what
// server-filesystem reads), the path the screen checked.
func TestKeptRootsReadAsNodeReadsThem(t *testing.T) {
	uris := []string{
		"file:///srv/ws", "file:///srv/ws/", "file:///srv/My%20Project", "file:///srv/caf%C3%A9",
		"file:///srv/a%3Bb", "file:///srv/ws%25", "file://localhost/srv/ws", "file:///srv/%7Euser",
		"file:///srv/a'b", "file:///srv/a b", "file:///srv/ws\\x", "file:///srv/ws/..", "file:///srv/%2e%2E",
	}
	compared := 0
	for _, uri := range uris {
		got, why := rootPath(uri)
		if why != "" {
			continue
		}
		compared++
		if node := nodeRootPath(t, uri); node != strings.TrimSuffix(got, "/") && node != got {
			t.Errorf("root %q: the screen checked %q, Node reads %q", uri, got, node)
		}
	}
	// A screen that withheld every root would compare nothing.
	if compared < 8 {
		t.Errorf("only %d of %d roots kept and compared with Node", compared, len(uris))
	}
}

func nodeRootPath(t *testing.T, uri string) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	arg, _ := json.Marshal(uri)
	out, err := exec.Command(node, "-e", `try { process.stdout.write(require("url").fileURLToPath(`+string(arg)+`)) } catch (e) { process.stdout.write("(throws: " + e.code + ")") }`).Output()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	return string(out)
}

func mkdirs(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}
