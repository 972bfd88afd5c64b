package proxy

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"bailiff/chain"
	"bailiff/engine"
	"bailiff/verify"
)

// TestClientRootsNeverReachTheApprovals: `run` checks the server's command
// line (here /work/share) against the audit log, but relays roots/list
// between client and server untouched, and server-filesystem replaces its
// command-line directories with the client's roots. A client whose
// workspace contains the state directory (an editor opened on $HOME, say)
// hands the agent's write_file the state database (and the log and
// evidence): the agent writes over its approvals although the gateway
// started with the log "outside every served root". The proxy now takes
// every client root that holds a protected location (Options.Protected,
// which run fills) out of the answer, says so, records it, and passes the
// others on.
func TestClientRootsNeverReachTheApprovals(t *testing.T) {
	server := peer(t, "@modelcontextprotocol/server-filesystem/dist/index.js")
	home := t.TempDir()
	share := filepath.Join(home, "share")
	state := filepath.Join(home, ".local", "state", "bailiff")
	for _, d := range []string{share, state} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	pol, err := engine.Load("p", []byte("version: 1\nrules:\n  - {id: all, tool: \"*\", action: allow}\n"))
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(state, "fs.audit.jsonl")
	w, err := chain.Open(logPath, chain.Sync)
	if err != nil {
		t.Fatal(err)
	}
	// The workspace root is reached through a symlink: resolved, it still
	// holds the state directory.
	link := filepath.Join(t.TempDir(), "ws")
	if err := os.Symlink(home, link); err != nil {
		t.Fatal(err)
	}
	stderr := &lockedBuffer{}
	opt := Options{Policy: pol, Log: w, Evidence: chain.OpenEvidence(chain.EvidenceDir(logPath)), Server: "fs",
		Session: "roots", Principal: engine.Principal{Subject: "ana"}, Stderr: stderr,
		CallTimeout: 30 * time.Second, AskTimeout: 30 * time.Second, Approvals: testApprovals(t, logPath),
		Protected: []string{logPath, chain.EvidenceDir(logPath), filepath.Join(filepath.Dir(logPath), "state.db")}}
	clientR, proxyW := io.Pipe()
	proxyR, clientW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		Run(ctx, opt, proxyR, proxyW, exec.Command("node", server, share))
		proxyW.Close()
		w.Close()
	}()
	// Roots are deprecated as of protocol 2026-07-28, but clients on
	// 2025-11-25 still send them, and servers still serve them.
	//lint:ignore SA1019 the test is about clients that still send roots
	caps := &mcp.ClientCapabilities{RootsV2: &mcp.RootCapabilities{ListChanged: true}}
	client := mcp.NewClient(&mcp.Implementation{Name: "editor", Version: "0"}, &mcp.ClientOptions{Capabilities: caps})
	//lint:ignore SA1019 the test is about clients that still send roots
	client.AddRoots(&mcp.Root{URI: "file://" + link, Name: "workspace"}, &mcp.Root{URI: "file://" + share, Name: "share"})
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: clientR, Writer: clientW}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	closed := false
	closeAll := func() {
		if !closed {
			closed = true
			cs.Close()
			<-done
		}
	}
	defer closeAll()
	answer := filepath.Join(filepath.Dir(logPath), "state.db")
	var res *mcp.CallToolResult
	for i := 0; i < 50; i++ { // the server fetches the roots after initialized
		cs.CallTool(ctx, &mcp.CallToolParams{Name: "create_directory", Arguments: map[string]any{"path": filepath.Dir(answer)}})
		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": answer, "content": `{"id":"roots-c1","answer":"approve"}`}})
		if err != nil {
			t.Fatal(err)
		}
		if !res.IsError {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if b, _ := os.ReadFile(answer); strings.HasPrefix(string(b), `{"id"`) {
		t.Errorf("the agent wrote %s through write_file: client roots put the state database in reach", answer)
	}
	// The other root, share, still reaches the server.
	ok := filepath.Join(share, "ok.txt")
	var werr string
	for i := 0; i < 50; i++ {
		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": ok, "content": "fine"}})
		if err != nil {
			t.Fatal(err)
		}
		if !res.IsError {
			break
		}
		if len(res.Content) > 0 {
			if tc, isText := res.Content[0].(*mcp.TextContent); isText {
				werr = tc.Text
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := os.Stat(ok); err != nil {
		t.Errorf("write_file in the kept root share failed: %s", werr)
	}
	closeAll()
	if !strings.Contains(stderr.String(), "withheld the client's root file://"+link) {
		t.Errorf("stderr does not report the withheld root:\n%s", stderr)
	}
	f, err := os.Open(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rep, err := verify.Log(logPath, f, opt.Evidence, verify.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Findings {
		t.Errorf("verify finding: %+v", f)
	}
	data, _ := os.ReadFile(logPath)
	if !strings.Contains(string(data), "client roots withheld") {
		t.Errorf("the log does not record the withheld root")
	}
}
