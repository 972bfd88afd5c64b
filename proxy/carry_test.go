package proxy

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"bailiff/chain"
	"bailiff/verify"
)

// TestTwoSessionsOneApproval: two HTTP sessions of one principal ask the
// same call; the approval given to the first is taken up by the second,
// which uses it. The first's retry then does not take its own answer
// again (the ask was settled by the other session): it is asked anew,
// nothing is forwarded twice, and the log, every session honest, verifies
// with no finding.
func TestTwoSessionsOneApproval(t *testing.T) {
	bin := sdkServer(t)
	policy := "version: 1\nrules:\n  - {id: ask-echo, server: go, tool: echo, action: ask}\n"
	var approvals *Approvals
	lee, leePub := approverKey(t, "lee")
	l := startListening(t, policy, []Upstream{{Name: "go", Cmd: exec.Command(bin)}}, HTTPOptions{}, func(o *Options, log string) {
		approvals = testApprovals(t, log)
		o.Approvals = approvals
		o.ApproverKeys = []string{leePub}
	})
	call := func(cs *mcp.ClientSession) (string, bool) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "go.echo", Arguments: map[string]any{"text": "x"}})
		if err != nil {
			t.Fatal(err)
		}
		return text(r), r.IsError
	}
	a := l.connect(t, "2025-11-25")
	b := l.connect(t, "2025-11-25")
	if got, isErr := call(a); !isErr || !strings.Contains(got, "bailiff approve") {
		t.Fatalf("A: %q, want an ask", got)
	}
	list, err := approvals.List()
	if err != nil || len(list) != 1 {
		t.Fatalf("pending: %v %v", list, err)
	}
	f, _ := os.Open(l.log)
	rec, err := FromLog(f, list)
	f.Close()
	if err != nil || !rec[list[0].ID].Found {
		t.Fatalf("ask %s not in the log: %v", list[0].ID, err)
	}
	ap := rec[list[0].ID].Approval
	ap.Answer, ap.Time = "approve", time.Now().UTC().Format(chain.TimeFormat)
	if _, err := approvals.Decide(ap, lee); err != nil {
		t.Fatal(err)
	}
	if got, isErr := call(b); isErr {
		t.Fatalf("B, holding the approval it took up: %q", got)
	}
	if got, isErr := call(a); !isErr || !strings.Contains(got, "bailiff approve") {
		t.Fatalf("A after B used the approval: %q, want a new ask", got)
	}
	a.Close()
	b.Close()
	l.stop()
	f, _ = os.Open(l.log)
	defer f.Close()
	rep, err := verify.Log(l.log, f, l.ev, verify.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range rep.Findings {
		t.Errorf("a finding on an honest log: %+v", fd)
	}
}

// TestUsedResetWhileRunning: two sessions hold one approval (both took
// it up); the first uses it; someone who can write the state database
// marks it unused again. The second session's identical call is still
// refused: the gateway remembers what it spent, whatever the file says.
func TestUsedResetWhileRunning(t *testing.T) {
	bin := sdkServer(t)
	policy := "version: 1\nrules:\n  - {id: ask-echo, server: go, tool: echo, action: ask}\n"
	var approvals *Approvals
	lee, leePub := approverKey(t, "lee")
	l := startListening(t, policy, []Upstream{{Name: "go", Cmd: exec.Command(bin)}}, HTTPOptions{}, func(o *Options, log string) {
		approvals = testApprovals(t, log)
		o.Approvals = approvals
		o.ApproverKeys = []string{leePub}
	})
	call := func(cs *mcp.ClientSession, txt string) (string, bool) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "go.echo", Arguments: map[string]any{"text": txt}})
		if err != nil {
			t.Fatal(err)
		}
		return text(r), r.IsError
	}
	a, b, c := l.connect(t, "2025-11-25"), l.connect(t, "2025-11-25"), l.connect(t, "2025-11-25")
	if got, isErr := call(a, "x"); !isErr || !strings.Contains(got, "bailiff approve") {
		t.Fatalf("A: %q, want an ask", got)
	}
	list, _ := approvals.List()
	f, _ := os.Open(l.log)
	rec, _ := FromLog(f, list)
	f.Close()
	ap := rec[list[0].ID].Approval
	ap.Answer, ap.Time = "approve", time.Now().UTC().Format(chain.TimeFormat)
	if _, err := approvals.Decide(ap, lee); err != nil {
		t.Fatal(err)
	}
	call(b, "other-b") // B takes the approval up
	call(c, "other-c") // and so does C
	if got, isErr := call(b, "x"); isErr {
		t.Fatalf("B: %q", got)
	}
	editState(t, approvals, "UPDATE grants SET used_at = NULL, used_by = NULL")
	if got, isErr := call(c, "x"); !isErr || !strings.Contains(got, "already used") {
		t.Fatalf("C after the reset: %q, want it refused as already used", got)
	}
	a.Close()
	b.Close()
	c.Close()
	l.stop()
}
