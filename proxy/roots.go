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
	"bailiff/chain"
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
	if !isRoots || m.Error != nil || len(p.opt.Protected) == 0 {
		return m
	}
	var res map[string]json.RawMessage
	var roots []json.RawMessage
	if json.Unmarshal(m.Result, &res) != nil || json.Unmarshal(res["roots"], &roots) != nil {
		p.logf("the client's roots cannot be read: none are passed to %s", p.opt.Server)
		p.noteWithheld(m.Result, "the client's roots/list answer cannot be read: withheld from the server")
		return &jsonrpc.Response{ID: m.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "bailiff could not read the client's roots"}}
	}
	kept := []json.RawMessage{}
	var withheld []string
	for _, raw := range roots {
		var r struct {
			URI string `json:"uri"`
		}
		if json.Unmarshal(raw, &r) != nil {
			withheld = append(withheld, fmt.Sprintf("%.200s (not a root)", raw))
			continue
		}
		if why := p.protectedRoot(r.URI); why != "" {
			withheld = append(withheld, r.URI+" ("+why+")")
			continue
		}
		kept = append(kept, raw)
	}
	if len(withheld) == 0 {
		return m
	}
	for _, w := range withheld {
		p.logf("withheld the client's root %s from %s", w, p.opt.Server)
	}
	p.noteWithheld(m.Result, "client roots withheld from the server: "+strings.Join(withheld, "; "))
	res["roots"], _ = json.Marshal(kept)
	out, err := json.Marshal(res)
	if err != nil {
		return &jsonrpc.Response{ID: m.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "bailiff could not screen the client's roots"}}
	}
	return &jsonrpc.Response{ID: m.ID, Result: out}
}

// protectedRoot says why a root the client gives may not reach the
// server, or "". The URI is read as server-filesystem reads it: a file://
// URL's path, else a path itself, ~ the home directory, relative to the
// server's directory.
func (p *Proxy) protectedRoot(uri string) string {
	path := uri
	if strings.HasPrefix(uri, "file://") {
		u, err := url.Parse(uri)
		if err != nil || u.Path == "" {
			return "not a file URL bailiff can read"
		}
		path = filepath.FromSlash(u.Path)
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
	body := &audit.MalformedBody{Call: "roots/list", Size: len(raw), Digest: chain.Digest(raw), Reason: reason}
	if err := audit.Malformed(p.opt.Log, p.opt.Now(), p.opt.Session, body); err != nil {
		p.logf("cannot write the audit log: %v", err)
	}
}
