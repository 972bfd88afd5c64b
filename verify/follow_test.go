package verify

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"bailiff/audit"
	"bailiff/chain"
	"bailiff/engine"
)

// counter is a follower that counts what it is told, and panics where
// told to.
type counter struct {
	calls, results, ends int
	panicOn              string
}

func (c *counter) Call(time.Time, int64, *engine.Call, engine.Decision) {
	c.calls++
	if c.panicOn == "call" {
		panic("follower broke")
	}
}
func (c *counter) Grant(time.Time, engine.Grant)                           {}
func (c *counter) Settle(time.Time, string, engine.Grant, engine.Decision) {}
func (c *counter) Result(time.Time, int, *audit.ResultBody, *audit.Output) { c.results++ }
func (c *counter) Tools(time.Time, *audit.ToolsBody)                       {}
func (c *counter) End() {
	c.ends++
	if c.panicOn == "end" {
		panic("follower broke at the end")
	}
}

// TestFollowers: every session is followed to its end, the end of the
// log included, and a follower that fails fails the verify: a reading
// that lost a session must not pass for a whole one.
func TestFollowers(t *testing.T) {
	path := filepath.Join("..", "fixtures", "chain", "good_mail.jsonl")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Without its last record, the last session never ends.
	lines := bytes.SplitAfter(data, []byte("\n"))
	cut := bytes.Join(lines[:len(lines)-2], nil)
	if !bytes.Contains(lines[len(lines)-2], []byte(`"kind":"end"`)) {
		t.Fatal("the fixture's last record is not an end")
	}
	ev := chain.OpenEvidence(chain.EvidenceDir(path))
	run := func(log []byte, panicOn string) (*Report, []*counter, error) {
		var fs []*counter
		var mu sync.Mutex // sessions open on every worker
		rep, err := Log("good_mail.jsonl", bytes.NewReader(log), ev, Options{Workers: 2,
			Follow: func(*audit.Session, time.Time, *audit.SessionBody) Follower {
				c := &counter{panicOn: panicOn}
				mu.Lock()
				fs = append(fs, c)
				mu.Unlock()
				return c
			}})
		return rep, fs, err
	}
	for _, log := range [][]byte{data, cut} {
		rep, fs, err := run(log, "")
		if err != nil || len(rep.Findings) > 0 {
			t.Fatalf("%v %v", err, rep.Findings)
		}
		calls, results := 0, 0
		for _, c := range fs {
			if c.ends != 1 {
				t.Errorf("a follower ended %d times", c.ends)
			}
			calls, results = calls+c.calls, results+c.results
		}
		if len(fs) != rep.Sessions || calls != rep.Calls || results == 0 {
			t.Errorf("followed %d sessions, %d calls, %d results; the log has %d sessions, %d calls", len(fs), calls, results, rep.Sessions, rep.Calls)
		}
	}
	for _, c := range []struct {
		log     []byte
		panicOn string
	}{{data, "call"}, {cut, "end"}} {
		if _, _, err := run(c.log, c.panicOn); err == nil || !strings.Contains(err.Error(), "internal error") {
			t.Errorf("a follower that panics at %s: %v", c.panicOn, err)
		}
	}
}
