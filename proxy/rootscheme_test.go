package proxy

import (
	"path/filepath"
	"testing"
)

// A file URL without the "//" authority ("file:/abs/path") or with an
// upper-case scheme ("FILE:/abs/path") is a file URL to every URL reader:
// Node's fileURLToPath("file:/x/state/keys") returns "/x/state/keys", and
// so does fileURLToPath(new URL("FILE:/x/state/keys")) (schemes are case
// insensitive). The screen checked only the prefix "file://", so it read
// these as a relative path under the server's directory, finds nothing
// protected there, and keeps the root: a server that hands any "file:" URI
// to fileURLToPath (server-filesystem forks that accept "file:" roots do)
// serves the approver's keys.
func TestRootFileURLWithoutAuthorityWithheld(t *testing.T) {
	home := t.TempDir()
	keys := filepath.Join(home, "state", "keys")
	mkdirs(t, keys, filepath.Join(home, "ws"))
	p := &Proxy{opt: Options{Protected: []string{keys}}, serverDir: filepath.Join(home, "ws")}
	for _, uri := range []string{
		"file:" + keys,
		"FILE:" + keys,
		"File:" + filepath.Dir(keys),
		"file:" + home,
	} {
		if why := p.protectedRoot(uri); why == "" {
			t.Errorf("root %q kept; Node's fileURLToPath reads it as %q, which holds the protected %s", uri, nodeRootPath(t, uri), keys)
		}
	}
}
