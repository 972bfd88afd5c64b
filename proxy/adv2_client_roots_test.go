package proxy

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"bailiff/chain"
	"bailiff/engine"
)

// TestADV2ClientRootsReachTheApprovals: `run` checks the server's command
// line (here /work/share) against the audit log, but relays roots/list
// between client and server untouched, and server-filesystem replaces its
// command-line directories with the client's roots. A client whose
// workspace contains the state directory (an editor opened on $HOME, say)
// hands the agent's write_file the approvals directory (and the log and
// evidence): the agent writes into LOG.approvals/ although the gateway
// started with the log "outside every served root".
func TestADV2ClientRootsReachTheApprovals(t *testing.T) {
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
	opt := Options{Policy: pol, Log: w, Evidence: chain.Evidence{Dir: chain.EvidenceDir(logPath)}, Server: "fs",
		Session: "adv2", Principal: engine.Principal{Subject: "ana"}, Stderr: &lockedBuffer{},
		CallTimeout: 30 * time.Second, AskTimeout: 30 * time.Second, Approvals: &Approvals{Dir: ApprovalsDir(logPath)}}
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
	client := mcp.NewClient(&mcp.Implementation{Name: "editor", Version: "0"},
		&mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{RootsV2: &mcp.RootCapabilities{ListChanged: true}}})
	client.AddRoots(&mcp.Root{URI: "file://" + home, Name: "workspace"})
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: clientR, Writer: clientW}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cs.Close(); <-done }()
	answer := filepath.Join(ApprovalsDir(logPath), "answers", "adv2-c1.json")
	var res *mcp.CallToolResult
	for i := 0; i < 50; i++ { // the server fetches the roots after initialized
		cs.CallTool(ctx, &mcp.CallToolParams{Name: "create_directory", Arguments: map[string]any{"path": filepath.Dir(answer)}})
		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": answer, "content": `{"id":"adv2-c1","answer":"approve"}`}})
		if err != nil {
			t.Fatal(err)
		}
		if !res.IsError {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := os.Stat(answer); err == nil {
		t.Errorf("the agent wrote %s through write_file: client roots put the approvals directory in reach", answer)
	}
}
