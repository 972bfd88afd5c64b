// Command confclient is the client the official conformance suite's
// client scenarios drive, with bailiff in front of the suite's server:
// it runs `bailiff run --url URL` in process (proxy.RunURL, allowing
// every call) and is an SDK client on its stdio, so what the suite sees
// is bailiff as an MCP client. The scenario is named by
// MCP_CONFORMANCE_SCENARIO; the audit log goes to a file of its own in
// $BAILIFF_CONF_DIR, which the test verifies. With BAILIFF_CONF_DIRECT=1
// it is the same client without bailiff, for the run to compare with.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"bailiff/chain"
	"bailiff/engine"
	"bailiff/proxy"
)

const policy = "version: 1\nrules:\n  - {id: all, tool: \"*\", action: allow}\n"

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: confclient URL")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Getenv("MCP_CONFORMANCE_SCENARIO")); err != nil {
		fmt.Fprintln(os.Stderr, "confclient:", err)
		os.Exit(1)
	}
}

func run(url, scenario string) error {
	if os.Getenv("BAILIFF_CONF_DIRECT") == "1" {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return drive(ctx, scenario, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1})
	}
	pol, err := engine.Load("allow-all", []byte(policy))
	if err != nil {
		return err
	}
	logPath := filepath.Join(os.Getenv("BAILIFF_CONF_DIR"), fmt.Sprintf("%s-%d.audit.jsonl", filepath.Base(scenario), os.Getpid()))
	w, err := chain.Open(logPath, chain.Sync)
	if err != nil {
		return err
	}
	opt := proxy.Options{Policy: pol, Log: w, Evidence: chain.OpenEvidence(chain.EvidenceDir(logPath)), Server: "suite",
		Session: "conformance-" + scenario, Principal: engine.Principal{Subject: "ci"}, Secret: make([]byte, 32), Stderr: os.Stderr}
	clientR, proxyW := io.Pipe()
	proxyR, clientW := io.Pipe()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	served := make(chan error, 1)
	go func() {
		err := proxy.RunURL(ctx, opt, proxyR, proxyW, url)
		proxyW.Close()
		served <- err
	}()
	err = drive(ctx, scenario, &mcp.IOTransport{Reader: clientR, Writer: clientW})
	clientW.Close()
	if serr := <-served; err == nil {
		err = serr
	}
	w.Close()
	return err
}

// drive plays one scenario as the SDK's own conformance client does, at
// the handshake revision (the suite's server of this version serves no
// other).
func drive(ctx context.Context, scenario string, t mcp.Transport) error {
	opts := &mcp.ClientOptions{}
	if scenario == "elicitation-sep1034-client-defaults" {
		opts.ElicitationHandler = func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
		}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bailiff-conformance", Version: "0"}, opts).
		Connect(ctx, t, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		return err
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		return err
	}
	var call *mcp.CallToolParams
	switch scenario {
	case "initialize":
		return nil
	case "tools_call":
		call = &mcp.CallToolParams{Name: "add_numbers", Arguments: map[string]any{"a": 5, "b": 3}}
	case "elicitation-sep1034-client-defaults":
		call = &mcp.CallToolParams{Name: "test_client_elicitation_defaults", Arguments: map[string]any{}}
	default:
		return fmt.Errorf("no such scenario %q", scenario)
	}
	if !slices.ContainsFunc(tools.Tools, func(t *mcp.Tool) bool { return t.Name == call.Name }) {
		return fmt.Errorf("tool %q not listed", call.Name)
	}
	res, err := cs.CallTool(ctx, call)
	if err == nil && res.IsError {
		err = fmt.Errorf("%s: %v", call.Name, res.Content)
	}
	return err
}
