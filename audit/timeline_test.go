package audit

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
		{"two calls far apart", 2, 3 * time.Hour, "hour"},
		{"hours", 200, 10 * time.Minute, "hour"},
		{"a quarter, daily: sparse seconds are not a chart of seconds", 90, 24 * time.Hour, "day"},
		{"800 days", 800, 24 * time.Hour, "month"},
		{"two centuries, yearly", 200, 366 * 24 * time.Hour, "century"},
		{"a century, yearly", 100, 365 * 24 * time.Hour, "year"},
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
			// Every bucket of the span is there, empty ones too.
			if span := c.n; c.step == time.Duration(0) || grain == grains[0].Name {
				if len(buckets) != span {
					t.Errorf("%d buckets for %d seconds", len(buckets), span)
				}
			}
			if total != c.n {
				t.Errorf("%d calls counted, want %d", total, c.n)
			}
			if len(buckets) > maxBuckets {
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
	// Times going back, and before 1970, fall in their own buckets.
	var back Timeline
	back.add(time.Date(1969, 12, 31, 23, 59, 59, 0, time.UTC), "deny", 1)
	back.add(time.Date(1970, 1, 1, 0, 0, 1, 0, time.UTC), "allow", 1)
	if g, b, c := back.Finest(); g != "second" || len(b) != 3 || c[b[0]]["deny"] != 1 || c[b[2]]["allow"] != 1 || b[0] != "1969-12-31 23:59:59" {
		t.Errorf("around the epoch: %q %v %v", g, b, c)
	}
	if g, b, _ := (&Timeline{}).Finest(); g != "" || b != nil {
		t.Errorf("no calls: %q %v", g, b)
	}
}

// FuzzTimeline: any sequence of times (any year, in any order) keeps
// every call at the grain the chart uses, within its bound.
func FuzzTimeline(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 200, 255, 7, 7})
	f.Fuzz(func(t *testing.T, data []byte) {
		var tl Timeline
		n := 0
		for i := 0; i+1 < len(data); i += 2 {
			// Spread the bytes over every grain, seconds to centuries,
			// and past the years a log can hold.
			at := time.Unix(int64(data[i])<<(data[i+1]%40)-1<<30, 0)
			if y := at.UTC().Year(); y < minYear || y > maxYear {
				tl.add(at, "allow", 1) // not counted
				continue
			}
			tl.add(at, "allow", 1)
			n++
		}
		grain, buckets, counts := tl.Finest()
		if n == 0 {
			if grain != "" {
				t.Fatalf("grain %q with no call", grain)
			}
			return
		}
		if len(buckets) > maxBuckets {
			t.Fatalf("%d buckets at %s", len(buckets), grain)
		}
		total := 0
		for _, b := range buckets {
			total += counts[b]["allow"]
		}
		if total != n {
			t.Fatalf("%d of %d calls at %s", total, n, grain)
		}
	})
}
