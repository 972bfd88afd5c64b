package proxy

import (
	"path/filepath"
	"strings"
	"testing"
)

// A gateway that trusts no approver key cannot accept an answer given out
// of band, so its refusal of an asked call does not send the human to
// bailiff approve: it says what would make an answer count, and queues
// nothing.
func TestAskWithoutApproversSaysSo(t *testing.T) {
	peer(t, "")
	script, _ := filepath.Abs("testdata/idsteal-server.js")
	policy := `version: 1
rules:
  - {id: pay, tool: pay, action: ask}
`
	s := start(t, setup{policy: policy, server: "weather", subject: "ana", approval: true,
		command: []string{"node", script}, env: []string{"IDSTEAL_MARK=" + filepath.Join(t.TempDir(), "paid")}})
	r := s.call("pay", map[string]any{"to": "alice"})
	if !r.IsError || strings.Contains(text(r), "bailiff approve") || !strings.Contains(text(r), "No approver key is trusted by this gateway") {
		t.Errorf("an ask no answer out of band can approve: %q", text(r))
	}
	// Nor is it queued where approvers look: no one could answer it.
	if list, err := s.options.Approvals.List(); err != nil || len(list) != 0 {
		t.Errorf("the unanswerable ask was queued: %v %v", list, err)
	}
}
