package audit

import (
	"time"
)

// maxBuckets bounds the span of a timeline's chart, in buckets of its
// grain: a chart wider than this is unreadable, and a grain whose span
// needs more is dropped, so a timeline never holds more than maxBuckets
// buckets per grain however long the logs.
const maxBuckets = 120

// grains are the widths a timeline counts at, finest first, with the
// layout that names a bucket by its start.
var grains = []struct {
	Name, layout string
	index        func(time.Time) int64
	start        func(int64) time.Time
}{
	{"second", "2006-01-02 15:04:05", fixed(time.Second), fixedStart(time.Second)},
	{"minute", "2006-01-02 15:04", fixed(time.Minute), fixedStart(time.Minute)},
	{"hour", "2006-01-02 15h", fixed(time.Hour), fixedStart(time.Hour)},
	{"day", "2006-01-02", fixed(24 * time.Hour), fixedStart(24 * time.Hour)},
	{"month", "2006-01",
		func(t time.Time) int64 { return int64(t.Year())*12 + int64(t.Month()) - 1 },
		func(i int64) time.Time {
			return time.Date(int(floorDiv(i, 12)), time.Month(i-floorDiv(i, 12)*12+1), 1, 0, 0, 0, 0, time.UTC)
		}},
	{"year", "2006",
		func(t time.Time) int64 { return int64(t.Year()) },
		func(i int64) time.Time { return time.Date(int(i), 1, 1, 0, 0, 0, 0, time.UTC) }},
	{"century", "2006",
		func(t time.Time) int64 { return int64(t.Year()) / 100 },
		func(i int64) time.Time { return time.Date(int(i)*100, 1, 1, 0, 0, 0, 0, time.UTC) }},
}

// A log's times have four-digit years (chain.TimeFormat), so at most 100
// centuries: the coarsest grain always fits. A time outside those years
// is not counted.
const minYear, maxYear = 0, 9999

func fixed(d time.Duration) func(time.Time) int64 {
	return func(t time.Time) int64 { return floorDiv(t.Unix(), int64(d/time.Second)) }
}

func fixedStart(d time.Duration) func(int64) time.Time {
	return func(i int64) time.Time { return time.Unix(i*int64(d/time.Second), 0).UTC() }
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// Timeline counts final verdicts over time at every grain at once, and
// keeps the grains whose span fits in maxBuckets: a few seconds of calls
// are drawn per second, a quarter per day, ten years per month, a century
// per year.
type Timeline struct {
	g [7]grainCounts
}

// grainCounts is one grain's buckets; counts is nil until a call is
// added and again once the grain is dropped, and lo..hi is its span.
type grainCounts struct {
	counts  map[int64]map[string]int // bucket -> verdict -> n
	lo, hi  int64
	dropped bool
}

func (t *Timeline) add(at time.Time, verdict string, n int) {
	at = at.UTC()
	if y := at.Year(); y < minYear || y > maxYear {
		return
	}
	for i := range grains {
		g := &t.g[i]
		if g.dropped {
			continue
		}
		k := grains[i].index(at)
		lo, hi := k, k
		if g.counts != nil {
			lo, hi = min(g.lo, k), max(g.hi, k)
		}
		if hi-lo >= maxBuckets && i < len(grains)-1 {
			g.counts, g.dropped = nil, true
			continue
		}
		if g.counts == nil {
			g.counts = map[int64]map[string]int{}
		}
		if g.counts[k] == nil {
			g.counts[k] = map[string]int{}
		}
		g.counts[k][verdict] += n
		g.lo, g.hi = lo, hi
	}
}

// Finest is the finest grain whose span fits, every bucket of the span
// in time order (empty ones too, so the columns keep time's proportions)
// named by its start, and their counts by verdict; "" when no call had a
// real time. Centuries are never dropped: a log's years span at most 100
// of them.
func (t *Timeline) Finest() (grain string, buckets []string, counts map[string]map[string]int) {
	for i := range grains {
		g := &t.g[i]
		if g.counts == nil {
			continue
		}
		counts = map[string]map[string]int{}
		for k := g.lo; k <= g.hi; k++ {
			name := grains[i].start(k).Format(grains[i].layout)
			buckets = append(buckets, name)
			counts[name] = g.counts[k]
			if counts[name] == nil {
				counts[name] = map[string]int{}
			}
		}
		return grains[i].Name, buckets, counts
	}
	return "", nil, nil
}
