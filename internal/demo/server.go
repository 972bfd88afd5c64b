// Package demo is what `bailiff demo` runs: an MCP server with real side
// effects (a workspace folder and an outbox file), the scripted agent
// that a poisoned email hijacks, and the checks of what reached the disk.
// The server knows nothing of bailiff: it does whatever it is asked, as a
// naive real server would, so what it did not do is what the gateway in
// front of it stopped.
package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Layout is where one demo's files live. Everything is under Dir.
type Layout struct {
	Dir string
}

// The demo directory's parts.
func (l Layout) Workspace() string { return filepath.Join(l.Dir, "workspace") }
func (l Layout) Outbox() string    { return filepath.Join(l.Dir, "outbox.jsonl") }
func (l Layout) Inbox() string     { return filepath.Join(l.Dir, "inbox.txt") }

// Server is the demo's MCP server, "office": mail in, mail out, and a
// workspace of files.
func Server(l Layout) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "bailiff-demo-office", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "get_recent_messages", Description: "Read the most recent messages in the inbox."},
		func(_ context.Context, _ *mcp.CallToolRequest, a struct {
			Limit int `json:"limit,omitempty"`
		}) (*mcp.CallToolResult, any, error) {
			b, err := os.ReadFile(l.Inbox())
			if err != nil {
				return nil, nil, err
			}
			return text(string(b)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "read_file", Description: "Read a file."},
		func(_ context.Context, _ *mcp.CallToolRequest, a struct {
			Path string `json:"path"`
		}) (*mcp.CallToolResult, any, error) {
			p, err := l.inside(a.Path)
			if err != nil {
				return nil, nil, err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return nil, nil, err
			}
			return text(string(b)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "write_file", Description: "Create or overwrite a file."},
		func(_ context.Context, _ *mcp.CallToolRequest, a struct {
			Path    string `json:"path"`
			Content string `json:"content"`
		}) (*mcp.CallToolResult, any, error) {
			p, err := l.inside(a.Path)
			if err != nil {
				return nil, nil, err
			}
			if err := os.WriteFile(p, []byte(a.Content), 0o644); err != nil {
				return nil, nil, err
			}
			return text(fmt.Sprintf("wrote %d bytes to %s", len(a.Content), a.Path)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "delete_files", Description: "Delete files."},
		func(_ context.Context, _ *mcp.CallToolRequest, a struct {
			Paths []string `json:"paths"`
		}) (*mcp.CallToolResult, any, error) {
			for _, path := range a.Paths {
				p, err := l.inside(path)
				if err != nil {
					return nil, nil, err
				}
				if err := os.Remove(p); err != nil {
					return nil, nil, err
				}
			}
			return text(fmt.Sprintf("deleted %d files", len(a.Paths))), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "send_email", Description: "Send an email."},
		func(_ context.Context, _ *mcp.CallToolRequest, a Email) (*mcp.CallToolResult, any, error) {
			line, err := json.Marshal(a)
			if err != nil {
				return nil, nil, err
			}
			f, err := os.OpenFile(l.Outbox(), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return nil, nil, err
			}
			_, err = f.Write(append(line, '\n'))
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return nil, nil, err
			}
			return text("sent to " + a.To), nil, nil
		})
	return s
}

// Serve runs the server on a stream pair (the process's stdio, under
// bailiff run) until the client goes.
func Serve(ctx context.Context, l Layout, r io.Reader, w io.Writer) error {
	return Server(l).Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(r), Writer: nopCloser{w}})
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// Email is one message the server sent: a line of the outbox.
type Email struct {
	To      string   `json:"to"`
	Cc      []string `json:"cc,omitempty"`
	Subject string   `json:"subject"`
	Body    string   `json:"body"`
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// inside resolves a path the way the server acts on it (relative to the
// workspace, through any symlink on the way) and refuses one that ends
// outside the demo directory, or at a symlink. That is not the control
// the demo shows (the workspace is, and bailiff holds the agent to it);
// it keeps a broken gateway from touching the rest of the machine.
func (l Layout) inside(path string) (string, error) {
	refuse := errors.New("the demo server touches nothing outside its demo directory")
	p := path
	if !filepath.IsAbs(p) {
		p = filepath.Join(l.Workspace(), p)
	}
	p = filepath.Clean(p)
	root, err := filepath.EvalSymlinks(l.Dir)
	if err != nil {
		return "", err
	}
	dir, err := filepath.EvalSymlinks(filepath.Dir(p))
	if err != nil {
		return "", refuse
	}
	p = filepath.Join(dir, filepath.Base(p))
	rel, err := filepath.Rel(root, p)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", refuse
	}
	if fi, err := os.Lstat(p); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		return "", refuse
	}
	return p, nil
}

// workspaceFiles lists the workspace's files by name.
func (l Layout) workspaceFiles() ([]string, error) {
	entries, err := os.ReadDir(l.Workspace())
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names, nil
}
