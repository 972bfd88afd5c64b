package audit

import (
	"testing"

	"bailiff/engine"
)

// TestRecycleClears: events given back are handed out again empty and
// holding nothing of the session they came from.
func TestRecycleClears(t *testing.T) {
	events := make([]Event, 3, 8)
	for i := range events {
		events[i] = Event{Pos: i + 1, Call: &CallStep{Call: &engine.Call{ID: "c"}}, End: &EndBody{}}
	}
	Recycle(events)
	got := pooledEvents()
	if len(got) != 0 {
		t.Fatalf("a recycled slice comes back with %d events", len(got))
	}
	for i, e := range got[:cap(got)] {
		if e.Pos != 0 || e.Call != nil || e.End != nil {
			t.Fatalf("event %d of a recycled slice still holds %+v", i, e)
		}
	}
}
