package replay

import (
	"testing"
	"time"
)

// TestTimelineGrain: a timeline is drawn at the finest grain that fits in
// maxBuckets, counts every call once at it, and keeps an answered ask's
// move from ask to its answer.
func TestTimelineGrain(t *testing.T) {
	t0 := time.Date(2026, 11, 3, 9, 0, 0, 0, time.UTC)
	cases := []struct {
		name  string
		n     int
		step  time.Duration
		grain string
	}{
		{"seconds", 50, time.Second, "second"},
		{"just over the seconds that fit", maxBuckets + 1, time.Second, "minute"},
		{"hours", 200, 10 * time.Minute, "hour"},
		{"a year, daily: days are never dropped", 365, 24 * time.Hour, "day"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var tl Timeline
			for i := 0; i < c.n; i++ {
				tl.add(t0.Add(time.Duration(i)*c.step), "allow", 1)
			}
			grain, buckets, counts := tl.Finest()
			if grain != c.grain {
				t.Fatalf("grain %q, want %q", grain, c.grain)
			}
			total := 0
			for i, b := range buckets {
				if i > 0 && buckets[i-1] >= b {
					t.Fatalf("buckets out of order: %q then %q", buckets[i-1], b)
				}
				total += counts[b]["allow"]
			}
			if total != c.n {
				t.Errorf("%d calls counted, want %d", total, c.n)
			}
			if c.grain != "day" && len(buckets) > maxBuckets {
				t.Errorf("%d buckets at %s", len(buckets), grain)
			}
		})
	}
	var tl Timeline
	tl.add(t0, "ask", 1)
	tl.add(t0, "ask", -1)
	tl.add(t0, "deny", 1)
	_, buckets, counts := tl.Finest()
	if len(buckets) != 1 || counts[buckets[0]]["ask"] != 0 || counts[buckets[0]]["deny"] != 1 {
		t.Errorf("an answered ask: %v %v", buckets, counts)
	}
	if g, b, _ := (&Timeline{}).Finest(); g != "" || b != nil {
		t.Errorf("no calls: %q %v", g, b)
	}
}
