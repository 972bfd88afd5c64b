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

// sharedApproval is a listening gateway whose policy asks for go.echo,
// with n HTTP sessions of one principal: the first has asked echo("x"),
// and lee has approved that ask out of band.
type sharedApproval struct {
	t         *testing.T
	l         *listening
	approvals *Approvals
	sessions  []*mcp.ClientSession
}

func newSharedApproval(t *testing.T, n int) *sharedApproval {
	bin := sdkServer(t)
	policy := "version: 1\nrules:\n  - {id: ask-echo, server: go, tool: echo, action: ask}\n"
	sa := &sharedApproval{t: t}
	lee, leePub := approverKey(t, "lee")
	sa.l = startListening(t, policy, []Upstream{{Name: "go", Cmd: exec.Command(bin)}}, HTTPOptions{}, func(o *Options, log string) {
		sa.approvals = testApprovals(t, log)
		o.Approvals = sa.approvals
		o.ApproverKeys = []string{leePub}
	})
	for range n {
		sa.sessions = append(sa.sessions, sa.l.connect(t, "2025-11-25"))
	}
	if got, isErr := sa.call(0, "x"); !isErr || !strings.Contains(got, "bailiff approve") {
		t.Fatalf("the first session: %q, want an ask", got)
	}
	list, err := sa.approvals.List()
	if err != nil || len(list) != 1 {
		t.Fatalf("pending: %v %v", list, err)
	}
	f, _ := os.Open(sa.l.log)
	rec, err := FromLog(f, list)
	f.Close()
	if err != nil || !rec[list[0].ID].Found {
		t.Fatalf("ask %s not in the log: %v", list[0].ID, err)
	}
	ap := rec[list[0].ID].Approval
	ap.Answer, ap.Time = "approve", time.Now().UTC().Format(chain.TimeFormat)
	if _, err := sa.approvals.Decide(ap, lee); err != nil {
		t.Fatal(err)
	}
	return sa
}

// call has session i call go.echo with text.
func (sa *sharedApproval) call(i int, echo string) (string, bool) {
	sa.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := sa.sessions[i].CallTool(ctx, &mcp.CallToolParams{Name: "go.echo", Arguments: map[string]any{"text": echo}})
	if err != nil {
		sa.t.Fatal(err)
	}
	return text(r), r.IsError
}

func (sa *sharedApproval) stop() {
	for _, cs := range sa.sessions {
		cs.Close()
	}
	sa.l.stop()
}

// TestTwoSessionsOneApproval: two HTTP sessions of one principal ask the
// same call; the approval given to the first is taken up by the second,
// which uses it. The first's retry then does not take its own answer
// again (the ask was settled by the other session): it is asked anew,
// nothing is forwarded twice, and the log, every session honest, verifies
// with no finding.
func TestTwoSessionsOneApproval(t *testing.T) {
	sa := newSharedApproval(t, 2)
	if got, isErr := sa.call(1, "x"); isErr {
		t.Fatalf("B, holding the approval it took up: %q", got)
	}
	if got, isErr := sa.call(0, "x"); !isErr || !strings.Contains(got, "bailiff approve") {
		t.Fatalf("A after B used the approval: %q, want a new ask", got)
	}
	sa.stop()
	f, _ := os.Open(sa.l.log)
	defer f.Close()
	rep, err := verify.Log(sa.l.log, f, sa.l.ev, verify.Options{})
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
	sa := newSharedApproval(t, 3)
	sa.call(1, "other-b") // B takes the approval up
	sa.call(2, "other-c") // and so does C
	if got, isErr := sa.call(1, "x"); isErr {
		t.Fatalf("B: %q", got)
	}
	editState(t, sa.approvals, "UPDATE grants SET used_at = NULL, used_by = NULL")
	if got, isErr := sa.call(2, "x"); !isErr || !strings.Contains(got, "already used") {
		t.Fatalf("C after the reset: %q, want it refused as already used", got)
	}
	sa.stop()
}
