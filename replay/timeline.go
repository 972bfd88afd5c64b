package replay

import (
	"sort"
	"time"
)

// maxBuckets bounds a timeline's buckets at every grain: a chart wider
// than this is unreadable, and a grain that needs more is dropped, so
// the memory a timeline takes never grows with the log.
const maxBuckets = 120

// grains are the widths a timeline counts at, finest first, with the
// layout that names a bucket (names sort as the times do).
var grains = []struct{ Name, layout string }{
	{"second", "2006-01-02 15:04:05"},
	{"minute", "2006-01-02 15:04"},
	{"hour", "2006-01-02 15h"},
	{"day", "2006-01-02"},
}

// Timeline counts final verdicts over time at each grain at once, and
// keeps the grains that fit in maxBuckets: a chart of a few seconds of
// calls is drawn per second, one of a year per day.
type Timeline struct {
	counts  [4]map[string]map[string]int // grain -> bucket -> verdict -> n
	dropped [4]bool
}

func (t *Timeline) add(at time.Time, verdict string, n int) {
	at = at.UTC()
	for g := range grains {
		if t.dropped[g] {
			continue
		}
		if t.counts[g] == nil {
			t.counts[g] = map[string]map[string]int{}
		}
		key := at.Format(grains[g].layout)
		m := t.counts[g][key]
		if m == nil {
			if len(t.counts[g]) == maxBuckets && g < len(grains)-1 {
				t.counts[g], t.dropped[g] = nil, true
				continue
			}
			m = map[string]int{}
			t.counts[g][key] = m
		}
		m[verdict] += n
	}
}

// Finest is the finest grain that fits, its buckets in time order (only
// those with calls) and their counts by verdict; "" when no call had a
// real time. Days are never dropped: a log of more than maxBuckets days
// is drawn per day.
func (t *Timeline) Finest() (grain string, buckets []string, counts map[string]map[string]int) {
	for g := range grains {
		if !t.dropped[g] && len(t.counts[g]) > 0 {
			for k := range t.counts[g] {
				buckets = append(buckets, k)
			}
			sort.Strings(buckets)
			return grains[g].Name, buckets, t.counts[g]
		}
	}
	return "", nil, nil
}
