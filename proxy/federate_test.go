package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const federatePolicy = `version: 1
rules:
  - {id: all, tool: "*", action: allow}
`

// TestGatewayFederates: a stdio gateway in front of two instances of the
// conformance server serves their resources, templates, prompts,
// completions and logging under each server's name, routes each request
// to its server under the name it has there, relays a server's sampling
// request to the client and the answer back, and records every answer.
func TestGatewayFederates(t *testing.T) {
	bin := everythingServer(t)
	var mu sync.Mutex
	var logs, updated []string
	sampled := 0
	s := start(t, setup{policy: federatePolicy, server: "gateway", upstreams: []Upstream{
		{Name: "a", Cmd: exec.Command(bin)}, {Name: "b", Cmd: exec.Command(bin)},
	}, client: func(o *mcp.ClientOptions) {
		//lint:ignore SA1019 the handshake revisions still carry sampling and logging, and the gateway must pass them
		o.LoggingMessageHandler = func(_ context.Context, r *mcp.LoggingMessageRequest) {
			mu.Lock()
			defer mu.Unlock()
			logs = append(logs, r.Params.Data.(string))
		}
		//lint:ignore SA1019 the handshake revisions still carry sampling and logging, and the gateway must pass them
		o.CreateMessageHandler = func(_ context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			mu.Lock()
			defer mu.Unlock()
			sampled++
			//lint:ignore SA1019 the handshake revisions still carry sampling and logging, and the gateway must pass them
			return &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: "sampled"}}, nil
		}
		o.ResourceUpdatedHandler = func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			mu.Lock()
			defer mu.Unlock()
			updated = append(updated, r.Params.URI)
		}
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	caps := s.cs.InitializeResult().Capabilities
	//lint:ignore SA1019 the handshake revisions still carry sampling and logging, and the gateway must pass them
	if caps.Resources == nil || !caps.Resources.Subscribe || caps.Prompts == nil || caps.Completions == nil || caps.Logging == nil {
		t.Errorf("the gateway's capabilities %+v: want resources (subscribe), prompts, completions and logging, which its servers serve", caps)
	}

	res, err := s.cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range res.Resources {
		uris = append(uris, r.URI)
	}
	for _, want := range []string{"a.test://static-text", "b.test://static-text", "b.test://watched-resource"} {
		if !strings.Contains(" "+strings.Join(uris, " ")+" ", " "+want+" ") {
			t.Errorf("resources/list %q lacks %s", uris, want)
		}
	}
	read, err := s.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "b.test://static-text"})
	if err != nil || len(read.Contents) != 1 || read.Contents[0].URI != "b.test://static-text" || !strings.Contains(read.Contents[0].Text, "static text resource") {
		t.Errorf("resources/read b.test://static-text: %v %+v", err, read)
	}
	tmpl, err := s.cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(tmpl.ResourceTemplates) != 2 || tmpl.ResourceTemplates[0].URITemplate != "a.test://template/{id}/data" {
		t.Errorf("resources/templates/list: %v %+v", err, tmpl)
	}
	read, err = s.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "a.test://template/42/data"})
	if err != nil || len(read.Contents) != 1 || !strings.Contains(read.Contents[0].Text, "42") {
		t.Errorf("a templated resource: %v %+v", err, read)
	}

	prompts, err := s.cs.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, pr := range prompts.Prompts {
		names[pr.Name] = true
	}
	if !names["a.test_simple_prompt"] || !names["b.test_simple_prompt"] || names["test_simple_prompt"] {
		t.Errorf("prompts/list names %v: want each server's under its name", names)
	}
	got, err := s.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "b.test_prompt_with_arguments", Arguments: map[string]string{"arg1": "x1", "arg2": "y2"}})
	if err != nil || len(got.Messages) == 0 || !strings.Contains(got.Messages[0].Content.(*mcp.TextContent).Text, "x1") {
		t.Errorf("prompts/get b.test_prompt_with_arguments: %v %+v", err, got)
	}
	if _, err := s.cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "a.test_prompt_with_arguments"},
		Argument: mcp.CompleteParamsArgument{Name: "arg1", Value: "x"}}); err != nil {
		t.Errorf("completion/complete: %v", err)
	}
	for _, bad := range []string{"zz.test://static-text", "test://static-text", "a."} {
		if _, err := s.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: bad}); err == nil || !strings.Contains(err.Error(), "<server>.<uri>") {
			t.Errorf("resources/read %q: %v, want a refusal naming the convention", bad, err)
		}
	}

	//lint:ignore SA1019 the handshake revisions still carry sampling and logging, and the gateway must pass them
	if err := s.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	s.call("b.test_tool_with_logging", map[string]any{})
	if r := s.call("a.test_sampling", map[string]any{"prompt": "hi"}); r.IsError || !strings.Contains(text(r), "sampled") {
		t.Errorf("a.test_sampling through the gateway: %q (isError %v)", text(r), r.IsError)
	}
	if err := s.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "b.test://watched-resource"}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n, l, u := sampled, len(logs), append([]string(nil), updated...)
		mu.Unlock()
		if n == 1 && l == 3 && len(u) > 0 {
			if u[0] != "b.test://watched-resource" {
				t.Errorf("notifications/resources/updated for %q, want the gateway's name b.test://watched-resource", u[0])
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sampled %d times, %d log messages, updates %q: want 1, 3 and b.test://watched-resource", n, l, u)
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.close()
	rep := verifyClean(t, s.log, s.options.Evidence)
	if rep.Calls != 2 {
		t.Errorf("verify counted %d calls, want 2", rep.Calls)
	}
	channels := readChannels(t, s.log)
	for _, want := range []string{"a resources/list", "b resources/read", "a resources/templates/list", "a prompts/list", "b prompts/get", "a sampling/createMessage", "b notifications/message"} {
		if !channels[want] {
			t.Errorf("no result record of channel %s: %v", want, channels)
		}
	}
}

// readChannels are the "server channel" pairs of a log's result records.
func readChannels(t *testing.T, log string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var r struct{ Kind, Server, Channel string }
		if json.Unmarshal(line, &r) == nil && r.Kind == "result" && r.Channel != "" {
			out[r.Server+" "+r.Channel] = true
		}
	}
	return out
}

// TestListenFederates: gateway --listen federates for both kinds of HTTP
// client: a handshake session (a relay session, as on stdio) and the
// stateless requests (through the SDK server), each seeing the server's
// resources and prompts under its name, and reading them.
func TestListenFederates(t *testing.T) {
	l := startListening(t, federatePolicy, []Upstream{{Name: "a", Cmd: exec.Command(everythingServer(t))}}, HTTPOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		cs := l.connect(t, version)
		res, err := cs.ListResources(ctx, nil)
		if err != nil || len(res.Resources) == 0 || !strings.HasPrefix(res.Resources[0].URI, "a.") {
			t.Errorf("%s: resources/list: %v %+v", version, err, res)
		}
		read, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "a.test://static-text"})
		if err != nil || len(read.Contents) != 1 || read.Contents[0].URI != "a.test://static-text" {
			t.Errorf("%s: resources/read: %v %+v", version, err, read)
		}
		if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "a.test_simple_prompt"}); err != nil {
			t.Errorf("%s: prompts/get: %v", version, err)
		}
		cs.Close()
	}
	l.verify(t, 2) // the handshake session, and the stateless one
	channels := readChannels(t, l.log)
	for _, want := range []string{"a resources/read", "a prompts/get"} {
		if !channels[want] {
			t.Errorf("no result record of channel %s: %v", want, channels)
		}
	}
}
