package proxy

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"bailiff/audit"
	"bailiff/engine"
)

// A server given its roots by the client (MCP roots: the server asks
// roots/list, the client answers) serves whatever the client's workspace
// holds, and bailiff run relays the question and the answer. An editor
// opened on $HOME would hand the agent the audit log, its approvals and
// the approver keys, which bailiff refuses to start with on the command
// line. So the proxy notes the ids of the server's roots/list requests,
// and takes out of the client's answer every root that contains, equals
// or lies inside a protected location (Options.Protected), with symlinks
// resolved on both sides, as server-filesystem resolves its roots; it
// says so on stderr and records a malformed record naming what it
// withheld. A root that cannot be read as a path is withheld too.

// noteRootsRequest remembers a server's roots/list request, whose answer
// the client sends back. Called for bailiff run only (a gateway relays no
// server-to-client requests).
func (p *Proxy) noteRootsRequest(m *jsonrpc.Request) {
	if m.Method != "roots/list" || !m.ID.IsValid() {
		return
	}
	p.mu.Lock()
	if p.rootsReqs == nil {
		p.rootsReqs = map[string]bool{}
	}
	p.rootsReqs[key(m.ID)] = true
	p.mu.Unlock()
}

// screenRoots returns the client's response m, if it answers a roots/list
// request of the server, with the protected roots taken out.
func (p *Proxy) screenRoots(m *jsonrpc.Response) *jsonrpc.Response {
	k := key(m.ID)
	p.mu.Lock()
	isRoots := p.rootsReqs[k]
	delete(p.rootsReqs, k)
	p.mu.Unlock()
	if !isRoots {
		return m
	}
	return p.screenRootsAnswer(m, p.opt.Server)
}

// screenRootsAnswer is the client's answer m to a roots/list request of
// server, with the protected roots taken out.
func (p *Proxy) screenRootsAnswer(m *jsonrpc.Response, server string) *jsonrpc.Response {
	if m.Error != nil || len(p.opt.Protected) == 0 {
		return m
	}
	// Read exactly, as the server will: a key given twice, or a "Roots"
	// or "URI" beside the real one (which Go's decoder would take for
	// it, and a TypeScript server would not), shows the check one root
	// and the server another.
	var res map[string]json.RawMessage
	var roots []json.RawMessage
	if _, err := engine.DecodeJSON(m.Result); err != nil || json.Unmarshal(m.Result, &res) != nil ||
		foldedKey(res, "roots") || json.Unmarshal(res["roots"], &roots) != nil {
		p.logf("the client's roots cannot be read: none are passed to %s", server)
		p.noteWithheld(m.Result, "the client's roots/list answer cannot be read: withheld from the server")
		return &jsonrpc.Response{ID: m.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "bailiff could not read the client's roots"}}
	}
	kept := []json.RawMessage{}
	var withheld []string
	for _, raw := range roots {
		var fields map[string]json.RawMessage
		var uri string
		if json.Unmarshal(raw, &fields) != nil || foldedKey(fields, "uri") || json.Unmarshal(fields["uri"], &uri) != nil {
			withheld = append(withheld, fmt.Sprintf("%.200s (not a root)", raw))
			continue
		}
		if why := p.protectedRoot(uri); why != "" {
			withheld = append(withheld, uri+" ("+why+")")
			continue
		}
		kept = append(kept, raw)
	}
	if len(withheld) == 0 {
		return m
	}
	for _, w := range withheld {
		p.logf("withheld the client's root %s from %s", w, server)
	}
	p.noteWithheld(m.Result, "client roots withheld from the server: "+strings.Join(withheld, "; "))
	res["roots"], _ = json.Marshal(kept)
	out, err := json.Marshal(res)
	if err != nil {
		return &jsonrpc.Response{ID: m.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "bailiff could not screen the client's roots"}}
	}
	return &jsonrpc.Response{ID: m.ID, Result: out}
}

// foldedKey reports whether fields has a key that is want but for case:
// two readers of the object could take different values for want.
func foldedKey(fields map[string]json.RawMessage, want string) bool {
	for k := range fields {
		if k != want && strings.EqualFold(k, want) {
			return true
		}
	}
	return false
}

// protectedRoot says why a root the client gives may not reach the
// server, or "". The URI is read as server-filesystem reads it: a file://
// URL's path (rootPath), else a path itself, ~ the home directory,
// relative to the server's directory.
func (p *Proxy) protectedRoot(uri string) string {
	path, why := rootPath(uri)
	if why != "" {
		return why
	}
	if path == "~" || strings.HasPrefix(path, "~/") {
		h, err := os.UserHomeDir()
		if err != nil {
			return "the home directory is unknown"
		}
		path = filepath.Join(h, path[1:])
	}
	if !filepath.IsAbs(path) {
		dir := p.serverDir
		if dir == "" {
			dir, _ = os.Getwd()
		}
		path = filepath.Join(dir, path)
	}
	root, err := resolvePath(filepath.Clean(path))
	if err != nil {
		return "its path cannot be resolved: " + err.Error()
	}
	for _, prot := range p.opt.Protected {
		abs, err := filepath.Abs(prot)
		if err != nil {
			return "a protected path cannot be resolved"
		}
		q, err := resolvePath(abs)
		if err != nil {
			q = abs
		}
		if inside(q, root) || inside(root, q) {
			return "it holds or lies in " + prot + ", which bailiff protects"
		}
	}
	return ""
}

// inside reports whether p is root or lies under it.
func inside(p, root string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// noteWithheld records that client roots were withheld, as a malformed
// record: the answer's size and digest, and what was taken out.
func (p *Proxy) noteWithheld(raw []byte, reason string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	body := audit.NewMalformed("roots/list", raw, reason)
	if err := audit.Malformed(p.opt.Log, p.opt.Now(), p.opt.Session, body); err != nil {
		p.logf("cannot write the audit log: %v", err)
	}
}

// rootPath is the path a root names, read as server-filesystem reads it:
// a URI that starts with file:// through Node's fileURLToPath (WHATWG: '\'
// is '/', the query and fragment dropped, dot segments resolved, then
// percent-decoded), anything else as a path. A root spelled any other way
// than its canonical path is withheld (why is not ""): where the screen
// and the server read a spelling apart, "state\keys" was one name to one
// and two to the other.
func rootPath(uri string) (path, why string) {
	if len(uri) >= 5 && strings.EqualFold(uri[:5], "file:") && !strings.HasPrefix(uri, "file://") {
		// Node's fileURLToPath reads "file:/x" and "FILE:///x" as /x;
		// server-filesystem takes them for relative paths.
		return "", "a file URL not spelled file:///path is read differently by different readers"
	}
	if !strings.HasPrefix(uri, "file://") {
		if strings.ContainsAny(uri, "\\\x00") || !canonicalPath(uri) {
			return "", "it is not spelled as its canonical path"
		}
		return uri, ""
	}
	rest := uri[len("file://"):]
	switch {
	case strings.ContainsAny(rest, "\\?#"):
		return "", "a file URL with a backslash, query or fragment is read differently by different readers"
	case !strings.HasPrefix(rest, "/") && !strings.HasPrefix(rest, "localhost/"):
		return "", "a file URL must name no host but localhost"
	}
	rest = rest[strings.IndexByte(rest, '/'):]
	low := strings.ToLower(rest)
	if strings.Contains(low, "%2f") || strings.Contains(low, "%5c") || strings.Contains(low, "%2e") || strings.Contains(low, "%00") {
		return "", "a file URL with an encoded '/', '\\', '.' or NUL is read differently by different readers"
	}
	dec, err := url.PathUnescape(rest)
	if err != nil || !canonicalPath(dec) {
		return "", "it is not spelled as its canonical path"
	}
	return filepath.FromSlash(dec), ""
}

// canonicalPath tells whether p is written as it resolves: no empty or
// dot segments (a trailing '/' aside), so every reader names one place.
func canonicalPath(p string) bool {
	if p == "" {
		return false
	}
	trim := p
	if len(trim) > 1 {
		trim = strings.TrimSuffix(trim, "/")
	}
	return filepath.Clean(trim) == trim
}
