// Command sdkserver is a real MCP server on the official Go SDK, for the
// proxy's tests: it speaks every revision the SDK does (2026-07-28 among
// them), or, with -only-stateless, 2026-07-28 alone; with
// -refuse-initialize it refuses the old handshake; with -listen it
// serves Streamable HTTP instead of stdio.
//
// Tools: echo (returns its text), send (records that it ran: a denied
// call must never reach it), ask (answers input_required, a
// multi-round-trip ask, under 2026-07-28), grow (adds the tool late,
// which the SDK announces with list_changed); with -random-tools N, N
// more tools with random names.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type textArgs struct {
	Text string `json:"text"`
}

func main() {
	only := flag.Bool("only-stateless", false, "speak revision 2026-07-28 only")
	noInit := flag.Bool("refuse-initialize", false, "answer initialize with an error (as a server of the stateless revision alone may)")
	ran := flag.String("ran", "", "file that send appends to when it runs")
	random := flag.Int("random-tools", 0, "also list this many tools with random names, as a malicious server may (each echoes)")
	listen := flag.String("listen", "", "serve Streamable HTTP on this address instead of stdio, and print the URL on stdout (stateless with -only-stateless)")
	flag.Parse()
	var opts mcp.ServerOptions
	if *only {
		opts.SupportedProtocolVersions = []string{"2026-07-28"}
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "sdkserver", Version: "1"}, &opts)
	if *noInit {
		s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if method == "initialize" {
					return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "initialize is not supported in the new protocol"}
				}
				return next(ctx, method, req)
			}
		})
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "echo the text back"},
		func(_ context.Context, _ *mcp.CallToolRequest, a textArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + a.Text}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "send", Description: "send the text somewhere"},
		func(_ context.Context, _ *mcp.CallToolRequest, a textArgs) (*mcp.CallToolResult, any, error) {
			if *ran != "" {
				f, err := os.OpenFile(*ran, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
				if err == nil {
					f.WriteString(a.Text + "\n")
					f.Close()
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sent"}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "ask", Description: "asks the client for input first"},
		func(_ context.Context, req *mcp.CallToolRequest, a textArgs) (*mcp.CallToolResult, any, error) {
			if len(req.Params.InputResponses) == 0 {
				return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{
					"q": &mcp.ElicitParams{Message: "which one?", RequestedSchema: map[string]any{"type": "object"}},
				}}, nil, nil
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "asked"}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "grow", Description: "adds the tool late"},
		func(_ context.Context, _ *mcp.CallToolRequest, a textArgs) (*mcp.CallToolResult, any, error) {
			mcp.AddTool(s, &mcp.Tool{Name: "late", Description: "a tool added during the session"},
				func(_ context.Context, _ *mcp.CallToolRequest, a textArgs) (*mcp.CallToolResult, any, error) {
					return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "late: " + a.Text}}}, nil, nil
				})
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "grown"}}}, nil, nil
		})
	for range *random {
		name := make([]byte, 12)
		rand.Read(name)
		mcp.AddTool(s, &mcp.Tool{Name: "r" + hex.EncodeToString(name)},
			func(_ context.Context, _ *mcp.CallToolRequest, a textArgs) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "random: " + a.Text}}}, nil, nil
			})
	}
	if *listen != "" {
		ln, err := net.Listen("tcp", *listen)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("http://%s/mcp\n", ln.Addr())
		h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: *only})
		log.Fatal(http.Serve(ln, h))
	}
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}
