package chain

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"time"
)

// PurgeSelect chooses the records whose evidence a purge removes: those
// of one session, or those recorded before a time. Content names the
// evidence a record refers to ("" for none): what a record's body means
// is not this package's to know.
type PurgeSelect struct {
	Session string
	Before  time.Time
	Content func(Record) string
}

func (s PurgeSelect) selects(r *Record) bool {
	if s.Session != "" {
		return r.Session == s.Session
	}
	return r.TS.Before(s.Before)
}

// PurgePlan is what a purge of one log removes and keeps. Records are
// never touched: they hold only digests of content, so the chain and its
// checkpoints verify after any purge.
type PurgePlan struct {
	// Selected counts the distinct contents the selection names; Gone are
	// those no kept result shares, sorted, and Kept the rest of the
	// log's, sorted.
	Selected   int
	Gone, Kept []string
	// Removed counts the Gone contents the store still holds: what an
	// earlier purge removed is not counted again.
	Removed int
	// SessionSeen says whether the log holds the selected session at all,
	// so a mistyped id is not reported as a purge of nothing.
	SessionSeen bool
}

// PlanPurge reads the log r, which must verify (a *VerifyError otherwise),
// and works out what purging sel from the store src removes.
func PlanPurge(r io.Reader, src Evidence, sel PurgeSelect) (*PurgePlan, error) {
	purge, keep := map[string]bool{}, map[string]bool{}
	plan := &PurgePlan{}
	rd := NewReader(bufio.NewReaderSize(r, 1<<20))
	for {
		rec, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if sel.Session != "" && rec.Session == sel.Session {
			plan.SessionSeen = true
		}
		content := sel.Content(rec)
		if content == "" {
			continue
		}
		if sel.selects(&rec) {
			purge[content] = true
		} else {
			keep[content] = true
		}
	}
	plan.Selected = len(purge)
	for d := range purge {
		if !keep[d] {
			plan.Gone = append(plan.Gone, d)
			if src.Has(d) {
				plan.Removed++
			}
		}
	}
	for d := range keep {
		plan.Kept = append(plan.Kept, d)
	}
	sort.Strings(plan.Gone)
	sort.Strings(plan.Kept)
	return plan, nil
}

// InPlace removes the plan's gone content from the store it was planned
// over.
func (p *PurgePlan) InPlace(src Evidence) error {
	for _, d := range p.Gone {
		if err := src.Remove(d); err != nil {
			return fmt.Errorf("cannot purge %s: %v", d, err)
		}
	}
	return nil
}

// Fill writes into the empty store dst what the plan keeps of src, and a
// purge mark for each gone content: the marks let verify tell what a
// purge removed from what was lost.
func (p *PurgePlan) Fill(src, dst Evidence) error {
	for _, d := range p.Kept {
		if err := src.CopyTo(dst, d); err != nil {
			return fmt.Errorf("cannot copy evidence %s: %v", d, err)
		}
	}
	for _, d := range p.Gone {
		if err := dst.MarkPurged(d); err != nil {
			return fmt.Errorf("cannot purge %s: %v", d, err)
		}
	}
	return dst.Close()
}
