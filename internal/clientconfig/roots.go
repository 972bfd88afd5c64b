package clientconfig

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Writable is a path a served tool may write, and why bailiff thinks so.
type Writable struct{ Path, Why string }

// WritableRoots are the places the tools bailiff serves may write: every
// argument of a server's command that names an existing file or directory
// (how server-filesystem and most servers are given their roots; a
// "--flag=PATH" counts by its value, and "~" or "~/DIR" is the home
// directory, as such servers expand it), and every allowed path prefix of
// the policy (the caller's to add). A shell command (sh -c SCRIPT and the like) hides its
// roots: every path in the script counts (see scriptRoots). A server that
// takes its roots from the client (MCP roots) is not covered here: the
// proxy takes protected locations out of the client's roots instead.
func WritableRoots(server string, dir string, command []string) []Writable {
	var out []Writable
	if script, ok := shellScript(command); ok {
		out = append(out, scriptRoots(server, dir, script)...)
	}
	for _, a := range command[min(1, len(command)):] {
		for _, cand := range []string{a, afterEq(a)} {
			if cand == "" || strings.HasPrefix(cand, "-") {
				continue
			}
			cand = expandHome(cand)
			if !filepath.IsAbs(cand) {
				cand = filepath.Join(dir, cand)
			}
			if _, err := os.Stat(cand); err == nil {
				out = append(out, Writable{cand, fmt.Sprintf("server %s is given %s", server, a)})
			}
		}
	}
	return out
}

// expandHome expands a leading "~" or "~/" to the home directory, as
// server-filesystem (and a shell) does with its root arguments.
func expandHome(p string) string {
	if p != "~" && !strings.HasPrefix(p, "~/") && !strings.HasPrefix(p, "~"+string(filepath.Separator)) {
		return p
	}
	h, err := os.UserHomeDir()
	if err != nil || h == "" {
		return p
	}
	return filepath.Join(h, p[1:])
}

// shellScript returns the script of a shell command: sh, bash, dash, zsh,
// ksh, ash or busybox (or env running one) with -c (or a flag cluster
// holding c, as -lc or -ec) runs a script.
func shellScript(command []string) (string, bool) {
	for len(command) > 1 && filepath.Base(command[0]) == "env" {
		command = command[1:]
		for len(command) > 1 && (strings.HasPrefix(command[0], "-") || strings.Contains(command[0], "=")) {
			command = command[1:]
		}
	}
	if len(command) < 2 {
		return "", false
	}
	switch strings.TrimSuffix(filepath.Base(command[0]), ".exe") {
	case "sh", "bash", "dash", "zsh", "ksh", "ash", "busybox":
	default:
		return "", false
	}
	// Everything after the first -c cluster is taken for the script and
	// its arguments: more words than the shell reads as the script, never
	// fewer ("bash -o pipefail -c SCRIPT" included).
	for i, a := range command[1:] {
		if strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.Contains(a, "c") {
			return strings.Join(command[2+i:], " "), true
		}
	}
	return "", false
}

// scriptRoots are the roots a shell script may hand the server it runs,
// which bailiff cannot know: every word of the script (split on white
// space, quotes and shell punctuation, with $VAR and ${VAR} from bailiff's
// environment, which the shell inherits, and ~ expanded) that is an
// absolute or home path, existing or not, and every other word naming an
// existing file or directory. It overestimates (a script's every path is
// taken for a root), never the other way for paths spelled out; a path
// the script computes (cd, $(...), a variable it sets) is beyond it.
func scriptRoots(server, dir, script string) []Writable {
	words := strings.FieldsFunc(script, func(r rune) bool {
		return r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '"' || r == '\'' || r == ';' || r == '&' || r == '|' || r == '(' || r == ')' || r == '`' || r == '<' || r == '>'
	})
	var out []Writable
	for _, w := range words {
		for _, cand := range []string{w, afterEq(w)} {
			if cand == "" || strings.HasPrefix(cand, "-") {
				continue
			}
			cand = expandHome(os.ExpandEnv(cand))
			why := fmt.Sprintf("server %s runs a shell script naming %s", server, w)
			if filepath.IsAbs(cand) {
				out = append(out, Writable{cand, why})
				continue
			}
			if _, err := os.Stat(filepath.Join(dir, cand)); err == nil {
				out = append(out, Writable{filepath.Join(dir, cand), why})
			}
		}
	}
	return out
}

func afterEq(a string) string {
	if _, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(a, "-") {
		return v
	}
	return ""
}

// Resolve makes p absolute and resolves the symlinks of its longest
// existing prefix, so a link or a relative path cannot hide where it is.
func Resolve(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return filepath.Clean(p)
	}
	rest := ""
	for cur := abs; ; {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return abs
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

// Within tells whether p is root or below it.
func Within(p, root string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}
