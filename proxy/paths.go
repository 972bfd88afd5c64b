package proxy

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/text/unicode/norm"

	"bailiff/engine"
)

// The engine confines paths lexically, but the server behind a gateway
// opens them through the filesystem: with public/cache -> ../private, a
// write under public/cache lands in private. For a server on this machine
// (bailiff run, a gateway's command upstreams) the proxy resolves every
// confined path argument before the engine decides, decides on the
// resolved path, records it, and forwards it, so the server writes where
// the check looked. What remains: the link can change between the check
// and the write, and a server elsewhere resolves paths on its own machine.

// maxLinks bounds the symlinks followed in one path, as the kernel does.
const maxLinks = 40

// resolvePath returns an absolute path with every symlink along it
// resolved, as the kernel would follow them (a ".." after a link leaves
// the link's target), including a last component that is a link, and a
// dangling link's target. The part that does not exist yet is kept as
// written. Relative paths are returned unchanged: the engine refuses
// them. A ".." after a component that does not exist is refused: the
// kernel would fail there, and a server that cleans paths lexically would
// not, so no single answer is the path that gets written.
func resolvePath(p string) (string, error) {
	if !filepath.IsAbs(p) {
		return p, nil
	}
	rest := split(p)
	cur := string(filepath.Separator)
	links := 0
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, c)
		fi, err := os.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) {
			// server-filesystem, finding no entry by these bytes, takes one
			// whose name is the same in NFC ("cafe\u0301" for "café", the
			// Kelvin sign for K), links included: a name that exists only
			// so cannot be judged by its bytes.
			if e, ok := unicodeTwin(cur, c); ok {
				return "", fmt.Errorf("%q: %q matches the existing %q only under Unicode normalization", p, c, e)
			}
			for _, r := range rest {
				if r == ".." {
					return "", fmt.Errorf("%q: \"..\" after %s, which does not exist", p, next)
				}
			}
			return filepath.Join(append([]string{next}, rest...)...), nil
		}
		if err != nil {
			return "", fmt.Errorf("%q: %v", p, err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		if links++; links > maxLinks {
			return "", fmt.Errorf("%q: more than %d symbolic links", p, maxLinks)
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", fmt.Errorf("%q: %v", p, err)
		}
		if filepath.IsAbs(target) {
			cur = string(filepath.Separator)
		}
		rest = append(split(target), rest...)
	}
	return cur, nil
}

// unicodeTwin finds an entry of dir whose name differs from name but is
// the same in NFC. A directory that cannot be read counts as having one.
func unicodeTwin(dir, name string) (string, bool) {
	want := norm.NFC.String(name)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return dir, !errors.Is(err, fs.ErrNotExist)
	}
	for _, e := range entries {
		if e.Name() != name && norm.NFC.String(e.Name()) == want {
			return e.Name(), true
		}
	}
	return "", false
}

// split is a path's components, empty ones left out.
func split(p string) []string {
	var out []string
	for _, c := range strings.Split(p, string(filepath.Separator)) {
		if c != "" {
			out = append(out, c)
		}
	}
	return out
}

// resolve resolves the symlinks in a call's confined path arguments when
// the server runs on this machine, and returns the arguments to decide on
// and forward, with what each rewritten one was. A server reached over
// HTTP may run anywhere: a link here says nothing of its paths.
func (p *Proxy) resolve(name string, args map[string]any) (map[string]any, map[string]string, error) {
	if !p.resolveLinks {
		return args, nil, nil
	}
	u, ref := p.route(name)
	if u != nil {
		if _, remote := u.wire.(*connStream); remote {
			return args, nil, nil
		}
	}
	out, from, err := p.opt.Policy.ResolvePaths(ref, args, resolvePath)
	if err != nil {
		return nil, nil, fmt.Errorf("a path argument cannot be resolved: %v", err)
	}
	return out, from, nil
}

// recordedResolved is what a call record says was resolved: not the
// value the client sent for a path the policy redacts, which would give
// away what the record leaves out.
func recordedResolved(from map[string]string, written map[string]any) map[string]string {
	var out map[string]string
	for k, v := range from {
		if !engine.HasPath(written, k) {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[k] = v
	}
	return out
}
