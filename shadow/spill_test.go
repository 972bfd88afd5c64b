package shadow

import (
	"errors"
	"fmt"
	"math/rand"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"bailiff/engine"
)

// randomPairs are n changed calls over a few files, in a shuffled order
// (parallel sessions finish in any order), with arguments and redactions.
func randomPairs(n int, seed int64) []Pair {
	r := rand.New(rand.NewSource(seed))
	verdicts := []engine.Verdict{engine.Allow, engine.Deny, engine.Ask}
	var ps []Pair
	for i := 0; i < n; i++ {
		base := verdicts[r.Intn(3)]
		cand := verdicts[(int(r.Intn(2))+1+slices.Index(verdicts, base))%3]
		p := Pair{File: fmt.Sprintf("log%d.jsonl", r.Intn(3)), Session: fmt.Sprintf("s%d", r.Intn(50)), Pos: r.Intn(n), ID: fmt.Sprintf("c%d", i),
			Tool:      "send_email",
			Baseline:  engine.Decision{Verdict: base, Check: engine.CheckRules, Rule: "r"},
			Candidate: engine.Decision{Verdict: cand, Check: engine.CheckTaint, Rule: "send", Reason: strings.Repeat("why ", r.Intn(20)), Unevaluable: r.Intn(10) == 0},
			Args:      map[string]any{"to": fmt.Sprintf("x%d@example.com", i), "body": strings.Repeat("é<&>", r.Intn(40))}}
		if r.Intn(4) == 0 {
			p.Redacted = []string{"body", "to"}
		}
		ps = append(ps, p)
	}
	return ps
}

// listed is every change a diff lists, copied.
func listed(t *testing.T, d *Diff) []Change {
	t.Helper()
	var out []Change
	if err := d.EachChange(func(c *Change) error { out = append(out, *c); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSpillListsWhatMemoryWould: a diff that spills to many sorted runs
// lists every changed call, whole and in the same order, as one that
// held them all in memory; a second listing is the first; memory holds
// no more than the bound at any time; and the file is never seen in the
// temporary directory, during or after.
func TestSpillListsWhatMemoryWould(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	pairs := randomPairs(3000, 1)
	held := NewDiff(-1)
	for _, p := range pairs {
		held.Add(p)
	}
	want := listed(t, held)

	defer func(n int) { spillBytes = n }(spillBytes)
	spillBytes = 16 << 10
	d := NewDiff(-1)
	for _, p := range pairs {
		d.Add(p)
		if d.all.bytes >= spillBytes {
			t.Fatalf("%d bytes held in memory, bound %d", d.all.bytes, spillBytes)
		}
	}
	if len(d.all.runs) < 10 {
		t.Fatalf("only %d runs: the test does not exercise the merge", len(d.all.runs))
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("the spill is visible in the temporary directory: %v", ents)
	}
	got := listed(t, d)
	if len(got) != len(want) || len(got) != held.Changed()+held.Counts[Unevaluable] {
		t.Fatalf("listed %d changes, memory lists %d of %d changed", len(got), len(want), held.Changed())
	}
	for i := range got {
		if !reflect.DeepEqual(normal(got[i]), normal(want[i])) {
			t.Fatalf("change %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
		if i > 0 && changeBefore(&got[i], &got[i-1]) {
			t.Fatalf("change %d is listed after one it comes before", i)
		}
	}
	if again := listed(t, d); !reflect.DeepEqual(again, got) {
		t.Fatal("a second listing differs from the first")
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("left behind: %v", ents)
	}
}

// normal makes a change read back from a file comparable with one held:
// an empty list is nil either way.
func normal(c Change) Change {
	if len(c.Redacted) == 0 {
		c.Redacted = nil
	}
	return c
}

// TestSpillCannotWrite: when the changed calls cannot be kept, the diff
// says so and lists nothing; it never lists a part as if it were all.
func TestSpillCannotWrite(t *testing.T) {
	t.Setenv("TMPDIR", "/nonexistent/bailiff-spill")
	defer func(n int) { spillBytes = n }(spillBytes)
	spillBytes = 1
	d := NewDiff(-1)
	for _, p := range randomPairs(10, 2) {
		d.Add(p)
	}
	err := d.Err()
	if err == nil || !strings.Contains(err.Error(), "cannot keep the changed calls") {
		t.Fatalf("Err() = %v", err)
	}
	if e := d.EachChange(func(*Change) error { t.Fatal("listed a change"); return nil }); !errors.Is(e, err) && e != err {
		t.Fatalf("EachChange = %v, want %v", e, err)
	}
}

// TestSpillDamaged: a spill file changed under bailiff (cut, or a length
// that claims more than the file holds) is an error, never a panic, a
// huge allocation or a short listing taken as whole.
func TestSpillDamaged(t *testing.T) {
	defer func(n int) { spillBytes = n }(spillBytes)
	spillBytes = 4 << 10
	for _, damage := range []func(f *os.File, size int64) error{
		func(f *os.File, size int64) error { return f.Truncate(size / 2) },
		func(f *os.File, _ int64) error { _, err := f.WriteAt([]byte{0x7f}, 0); return err },                      // a category that is none
		func(f *os.File, _ int64) error { _, err := f.WriteAt([]byte{1, 0xff, 0xff, 0xff, 0x0f}, 0); return err }, // a length of 4 GB
	} {
		d := NewDiff(-1)
		for _, p := range randomPairs(200, 3) {
			d.Add(p)
		}
		if len(d.all.runs) < 2 {
			t.Fatal("nothing spilled")
		}
		if err := damage(d.all.f, d.all.end); err != nil {
			t.Fatal(err)
		}
		err := d.EachChange(func(*Change) error { return nil })
		if err == nil || !strings.Contains(err.Error(), "cannot keep the changed calls") {
			t.Errorf("damaged spill: %v", err)
		}
		d.Close()
	}
}

// FuzzSpillRead: reading a run of any bytes stops with an error or a
// change, never a panic, and never counts more bytes than the run has.
func FuzzSpillRead(f *testing.F) {
	c := changeOf(NewlyDenied, randomPairs(1, 4)[0])
	f.Add(appendChange(nil, &c))
	f.Add([]byte{4, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, data []byte) {
		tmp, err := os.CreateTemp(t.TempDir(), "run")
		if err != nil {
			t.Fatal(err)
		}
		defer tmp.Close()
		tmp.Write(data)
		cur := &cursor{r: newRunReader(tmp, section{0, int64(len(data))}), left: int64(len(data))}
		for i := 0; i < len(data)+1; i++ {
			ok, err := cur.next()
			if cur.left < 0 {
				t.Fatalf("left %d", cur.left)
			}
			if err != nil || !ok {
				return
			}
		}
		t.Fatal("more changes than bytes")
	})
}
