package proxy

import (
	"strings"
	"testing"
)

// Only accept with approve true approves; every other answer is a
// decline, and the note says which it was, since the record's words
// ("declined by elicitation") cover them all.
func TestElicitAnswer(t *testing.T) {
	for _, c := range []struct {
		action  string
		content map[string]any
		approve bool
		note    string
	}{
		{"accept", map[string]any{"approve": true}, true, "approved"},
		{"accept", map[string]any{"approve": false}, false, "approve: false"},
		{"accept", nil, false, "accepted without approve: true"},
		{"accept", map[string]any{"approve": "true"}, false, "accepted without approve: true"},
		{"decline", map[string]any{"approve": true}, false, "declined"},
		{"cancel", nil, false, "cancelled"},
		{"ACCEPT", map[string]any{"approve": true}, false, `unknown action "ACCEPT"`},
	} {
		approve, note := elicitAnswer(c.action, c.content)
		if approve != c.approve || !strings.Contains(note, c.note) {
			t.Errorf("%s %v: approve %v, note %q; want %v and %q", c.action, c.content, approve, note, c.approve, c.note)
		}
	}
}
