package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryInputRefusesWhatItIsNot feeds every file a command reads each
// of: a missing file, a directory, an empty file, a binary file and
// another kind of bailiff file. Each must end in exit 2 and one error line
// that names the file and says what it is, before any output is written.
func TestEveryInputRefusesWhatItIsNot(t *testing.T) {
	fx, err := filepath.Abs("../../fixtures")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	good := map[string]string{
		"LOG":    fx + "/chain/good_mail.jsonl",
		"CKPT":   fx + "/chain/good_mail.ckpt",
		"PUB":    fx + "/chain/src/test.pub",
		"KEY":    fx + "/chain/src/test.key",
		"LEEKEY": fx + "/chain/src/lee.key",
		"TRACE":  fx + "/chain/src/mail.jsonl",
		"POL":    fx + "/chain/src/policy.yaml",
		"LABELS": fx + "/chain/src/labels.jsonl",
		"SECRET": fx + "/chain/src/secret",
		"TOOLS":  fx + "/mcp-tools/mail-tools.json",
		"PROOF":  filepath.Join(dir, "proof.json"),
		"SHADOW": filepath.Join(dir, "shadow.json"),
		"GWCONF": filepath.Join(dir, "gateway.yaml"),
		"CLIENT": filepath.Join(dir, "client.json"),
		"OUT":    filepath.Join(dir, "out"),
	}
	mustRun := func(args ...string) []byte {
		t.Helper()
		var out, errb bytes.Buffer
		if code := run(args, nil, &out, &errb); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errb.String())
		}
		return out.Bytes()
	}
	write := func(name string, data []byte) {
		t.Helper()
		if err := os.WriteFile(name, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(good["PROOF"], mustRun("prove", good["LOG"], "1", "--checkpoint", good["CKPT"]))
	write(good["SHADOW"], mustRun("shadow", "--candidate", fx+"/chain/src/candidate.yaml", "--format", "json", good["LOG"]))
	write(good["GWCONF"], []byte("servers:\n  mail:\n    command: /bin/false\n"))
	write(good["CLIENT"], []byte(`{"mcpServers": {"mail": {"command": "/bin/false"}}}`+"\n"))

	// Each case names the slot under test with {} and what else fits there.
	cases := []struct {
		args  string
		wrong string // a bailiff file of another kind
	}{
		{"replay --policy {} TRACE", "TRACE"},
		{"replay --policy POL {}", "LOG"},
		{"record --policy {} TRACE -o OUT", "LOG"},
		{"record --policy POL {} -o OUT", "LOG"},
		{"record --policy POL --secret {} TRACE -o OUT", ""},
		{"record --policy POL --approver-key {} TRACE -o OUT", "PUB"},
		{"verify {}", "TRACE"},
		{"verify --checkpoint CKPT --key {} LOG", "KEY"},
		{"verify --checkpoint {} --key PUB LOG", "PUB"},
		{"verify --approver-key {} LOG", "KEY"},
		{"checkpoint {} --key KEY -o OUT", "TRACE"},
		{"checkpoint LOG --key {} -o OUT", "PUB"},
		{"prove {} 1 --checkpoint CKPT", "POL"},
		{"prove LOG 1 --checkpoint {}", "LOG"},
		{"verify-proof {} --key PUB", "CKPT"},
		{"verify-proof PROOF --key {}", "KEY"},
		{"repair {} -o OUT", "TRACE"},
		{"purge {} --session s1 -o OUT", "TRACE"},
		{"shadow --candidate {} LOG", "LOG"},
		{"shadow --candidate POL {}", "POL"},
		{"ablate {}", "POL"},
		{"ablate --labels {} LOG", "POL"},
		{"policy lint {}", "LOG"},
		{"policy lint POL --tools {}", "POL"},
		{"policy import --from mcp-bouncer {}", "POL"},
		{"gateway --config {}", "POL"},
		{"init --config {} --yes", "POL"},
		{"approvals --audit {}", "TRACE"},
		{"approve --audit {} --key LEEKEY c1", "TRACE"},
		{"approve --audit LOG --key {} c1", "PUB"},
		{"report --audit {} -o OUT", "TRACE"},
		{"report --audit LOG --policy {} -o OUT", "LOG"},
		{"report --audit LOG --tools {} -o OUT", "POL"},
		{"report --audit LOG --shadow {} -o OUT", "POL"},
		{"report --audit LOG --ablate {} -o OUT", "LOG"},
		{"report --audit LOG --checkpoint {} --key PUB -o OUT", "LOG"},
		{"report --audit LOG --checkpoint CKPT --key {} -o OUT", "KEY"},
	}
	bad := map[string]func(string) string{
		"missing": func(p string) string { return p },
		"directory": func(p string) string {
			if err := os.Mkdir(p, 0o700); err != nil {
				t.Fatal(err)
			}
			return p
		},
		"empty": func(p string) string { write(p, nil); return p },
		"binary": func(p string) string {
			write(p, []byte("\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x03\x00>\x00\x01\x00\x00\x00"))
			return p
		},
	}
	// What each error must say about the file, beside its name.
	says := map[string]string{
		"missing":   "no such file",
		"directory": "directory",
		"empty":     "empty",
		"binary":    "binary",
	}
	for _, c := range cases {
		kinds := []string{"missing", "directory", "empty", "binary", "wrong"}
		if c.wrong == "" {
			kinds = []string{"missing", "directory", "empty"} // a secret is any bytes
		}
		for _, kind := range kinds {
			t.Run(c.args+"/"+kind, func(t *testing.T) {
				os.RemoveAll(good["OUT"])
				var slot, want string
				if kind == "wrong" {
					slot, want = good[c.wrong], " is "
				} else {
					slot, want = bad[kind](filepath.Join(t.TempDir(), "input-"+kind)), says[kind]
				}
				var args []string
				for _, a := range strings.Fields(c.args) {
					switch {
					case a == "{}":
						args = append(args, slot)
					case good[a] != "":
						args = append(args, good[a])
					default:
						args = append(args, a)
					}
				}
				var out, errb bytes.Buffer
				code := run(args, nil, &out, &errb)
				lines := strings.Split(strings.TrimSuffix(errb.String(), "\n"), "\n")
				var errs []string
				for _, l := range lines {
					if strings.HasPrefix(l, "bailiff: error: ") {
						errs = append(errs, l)
					}
				}
				if code != 2 || len(errs) != 1 {
					t.Fatalf("%v: exit %d, want 2 and one error line; stderr:\n%s", args, code, errb.String())
				}
				if !strings.Contains(errs[0], slot) || !strings.Contains(errs[0], want) {
					t.Errorf("%v: error %q does not name %s and say %q", args, errs[0], slot, want)
				}
				if out.Len() != 0 {
					t.Errorf("a refused command wrote to stdout: %q", out.String())
				}
				if _, err := os.Stat(good["OUT"]); err == nil {
					t.Errorf("a refused command wrote %s", good["OUT"])
				}
			})
		}
	}
}
