package telemetry

import (
	"sync"
	"unicode/utf8"
)

// Label values that stand for names not kept as themselves.
const (
	// Other is every name past a dimension's cap, or unfit for a label.
	Other = "_other"
	// Unpinned is a tool the session did not pin (a call the pinning
	// check refused): its name is whatever the caller sent.
	Unpinned = "_unpinned"
)

// maxLabel is the longest name kept as a label value.
const maxLabel = 128

// bounded hands out a dimension's label values: each name it has seen,
// up to max of them, and Other for the rest.
type bounded struct {
	mu   sync.Mutex
	max  int
	seen map[string]bool
}

func newBounded(max int) *bounded { return &bounded{max: max, seen: map[string]bool{}} }

func (b *bounded) value(name string) string {
	if name == "" || len(name) > maxLabel || !utf8.ValidString(name) || name == Other || name == Unpinned {
		// A name spelled as one of the stand-ins would read as one.
		return Other
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.seen[name] {
		return name
	}
	if len(b.seen) >= b.max {
		return Other
	}
	b.seen[name] = true
	return name
}

// tools bounds tool names per server: one server's long listing cannot
// push another's tools out.
type tools struct {
	mu       sync.Mutex
	perSrv   int
	byServer map[string]*bounded
}

func (t *tools) value(server, tool string) string {
	t.mu.Lock()
	b := t.byServer[server]
	if b == nil {
		b = newBounded(t.perSrv)
		t.byServer[server] = b
	}
	t.mu.Unlock()
	return b.value(tool)
}
