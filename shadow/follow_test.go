package shadow

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"
	"time"

	"bailiff/audit"
	"bailiff/chain"
	"bailiff/engine"
	"bailiff/replay"
	"bailiff/verify"
)

// TestFollowedLogScoresAsReadTwice: a log scored in the pass that
// verifies it (its sessions' history told by verify) gives exactly the
// pairs of a second, separate read of it. Every trace fixture is recorded
// as a log and scored under every ablation variant and every other
// fixture policy, so a step verify does not pass on, or passes on
// differently, changes some pair.
func TestFollowedLogScoresAsReadTwice(t *testing.T) {
	skey, _, err := chain.GenerateKey(rand.Reader, "lee")
	if err != nil {
		t.Fatal(err)
	}
	var cands []Candidate
	for _, c := range engine.Switchable() {
		cands = append(cands, func(p *engine.Policy) (*engine.Policy, error) { return p.Without(engine.OffCheck(c)) })
	}
	// The same variants of a policy loaded again: each keeps a state of
	// its own, where the ones above decide on the baseline's.
	variants := len(cands)
	for _, c := range engine.Switchable() {
		cands = append(cands, func(p *engine.Policy) (*engine.Policy, error) {
			again, err := engine.Load("again.yaml", p.Canonical())
			if err != nil {
				return nil, err
			}
			if again.SharesState(p) {
				return nil, fmt.Errorf("a policy loaded again shares the state of the one it was loaded from")
			}
			return again.Without(engine.OffCheck(c))
		})
	}
	for _, name := range []string{"main", "ask-on-taint", "corpus-candidate"} {
		cands = append(cands, Fixed(loadFixturePolicy(t, name)))
	}
	logs, pairs, changed, answered := 0, 0, 0, 0
	for _, set := range []string{"main", "ask-on-taint"} {
		pol := loadFixturePolicy(t, set)
		files, _ := filepath.Glob(filepath.Join("..", "fixtures", "traces", set, "*.jsonl"))
		for _, file := range files {
			path := recordFixture(t, pol, file, skey)
			if path == "" {
				continue
			}
			twice := collect(t, Input{Name: path}, cands)
			once := collect(t, Input{Name: path, Together: verifyFollowing(path)}, cands)
			if !reflect.DeepEqual(once, twice) {
				t.Errorf("%s: scored in verify's pass:\n%v\nread again:\n%v", file, once, twice)
			}
			if shared, own := byCandidate(once, 0, variants), byCandidate(once, variants, 2*variants); !reflect.DeepEqual(shared, own) {
				t.Errorf("%s: variants decided on the baseline's state:\n%v\non states of their own:\n%v", file, shared, own)
			}
			logs++
			for _, p := range twice {
				pairs++
				if p.Candidate.Verdict != p.Baseline.Verdict {
					changed++
				}
				if p.Candidate.Check == engine.CheckApproval {
					answered++
				}
			}
		}
	}
	// What the comparison covers: without these it proves little.
	if logs < 60 || pairs < 1000 || changed < 50 || answered < 20 {
		t.Errorf("compared %d logs, %d pairs, %d changed, %d answered by a grant: too few to stand for the fixtures", logs, pairs, changed, answered)
	}
	t.Logf("%d logs, %d pairs, %d changed, %d answered by a grant", logs, pairs, changed, answered)
}

func loadFixturePolicy(t *testing.T, name string) *engine.Policy {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "fixtures", "policies", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := engine.Load(name+".yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// recordFixture records a trace as the log the gateway would write, and
// returns its path, or "" for a trace that records no log that verifies.
func recordFixture(t *testing.T, pol *engine.Policy, file, skey string) string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	events, err := replay.ParseTrace(file, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	var buf bytes.Buffer
	ev := chain.OpenEvidence(chain.EvidenceDir(path))
	r := &audit.Recorder{Policy: pol, Log: chain.NewWriter(&buf, chain.None), Evidence: ev,
		Secret: []byte("0123456789abcdef0123456789abcdef"), Approvers: map[string]string{"lee": skey}}
	if err := r.Record(file, events); err != nil {
		return ""
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	rep, err := verify.Log(path, bytes.NewReader(buf.Bytes()), ev, verify.Options{})
	if err != nil || len(rep.Findings) > 0 {
		return ""
	}
	return path
}

// verifyFollowing is the Together of logs paths, as bailiff's commands
// give it: the logs verified together, each followed.
func verifyFollowing(paths ...string) func([]Follow, func(*engine.Policy) bool) error {
	return func(follows []Follow, ordered func(*engine.Policy) bool) error {
		var ins []verify.Input
		for k, path := range paths {
			f, err := os.Open(path)
			if err != nil {
				return err
			}
			defer f.Close()
			follow := follows[k]
			ins = append(ins, verify.Input{Name: path, R: f, Evidence: chain.OpenEvidence(chain.EvidenceDir(path)),
				Follow: func(base *audit.Session, now time.Time, body *audit.SessionBody) verify.Follower {
					if fl := follow(base, now, body); fl != nil {
						return fl
					}
					return nil
				}})
		}
		reps, err := verify.Logs(ins, verify.Options{Ordered: ordered})
		if err != nil {
			return err
		}
		for _, rep := range reps {
			if len(rep.Findings) > 0 {
				return fmt.Errorf("%s: %d findings", rep.File, len(rep.Findings))
			}
		}
		return nil
	}
}

// byCandidate is the pairs of candidates from to to, each numbered from
// from.
func byCandidate(pairs []indexed, from, to int) []indexed {
	var out []indexed
	for _, p := range pairs {
		if p.Cand >= from && p.Cand < to {
			p.Cand -= from
			out = append(out, p)
		}
	}
	return out
}

type indexed struct {
	Cand int
	Pair
}

func collect(t *testing.T, in Input, cands []Candidate) []indexed {
	t.Helper()
	var out []indexed
	if err := compareEach([]Input{in}, nil, cands, nil, func(i int, p Pair) { out = append(out, indexed{i, p}) }); err != nil {
		t.Fatal(err)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Cand != out[j].Cand {
			return out[i].Cand < out[j].Cand
		}
		return out[i].Pos < out[j].Pos
	})
	return out
}

// TestFollowedLogsFailClosed: what stops a comparison read twice stops
// it in verify's pass too: one session in two logs (it would be counted
// twice), and a candidate that cannot be derived for a session.
func TestFollowedLogsFailClosed(t *testing.T) {
	skey, _, err := chain.GenerateKey(rand.Reader, "lee")
	if err != nil {
		t.Fatal(err)
	}
	pol := loadFixturePolicy(t, "main")
	a := recordFixture(t, pol, filepath.Join("..", "fixtures", "traces", "main", "allow_approval_granted.jsonl"), skey)
	if a == "" {
		t.Fatal("the fixture records no log that verifies")
	}
	b := filepath.Join(t.TempDir(), "copy.jsonl")
	copyFile(t, a, b)
	if _, err := os.Stat(chain.EvidenceDir(a)); err == nil {
		if err := os.CopyFS(chain.EvidenceDir(b), os.DirFS(chain.EvidenceDir(a))); err != nil {
			t.Fatal(err)
		}
	}
	both := []Input{{Name: a, Together: verifyFollowing(a, b)}, {Name: b, Together: verifyFollowing(a, b)}}
	err = compareEach(both, nil, []Candidate{Fixed(pol)}, nil, func(int, Pair) {})
	// The copy uses the log's signed approval a second time, which verify
	// reports before shadow can see the session twice: refused either way.
	if err == nil || (!bytes.Contains([]byte(err.Error()), []byte("is in both")) && !bytes.Contains([]byte(err.Error()), []byte("copy.jsonl: 1 findings"))) {
		t.Errorf("one session in two logs: %v", err)
	}
	broken := func(*engine.Policy) (*engine.Policy, error) { return nil, fmt.Errorf("no such variant") }
	one := []Input{{Name: a, Together: verifyFollowing(a)}}
	err = compareEach(one, nil, []Candidate{broken}, nil, func(int, Pair) {})
	if err == nil || err.Error() != "no such variant" {
		t.Errorf("a candidate that cannot be derived: %v", err)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestBaselinePolicyOverALogIsTheRecord: a log's own policy given as the
// baseline recomputes exactly what the log records, grants settling
// their asks included: the baseline's pass drops the recorded decisions,
// not the record of which grant settled which ask.
func TestBaselinePolicyOverALogIsTheRecord(t *testing.T) {
	skey, _, err := chain.GenerateKey(rand.Reader, "lee")
	if err != nil {
		t.Fatal(err)
	}
	pol := loadFixturePolicy(t, "main")
	files, _ := filepath.Glob(filepath.Join("..", "fixtures", "traces", "main", "*.jsonl"))
	settled := 0
	for _, file := range files {
		path := recordFixture(t, pol, file, skey)
		if path == "" {
			continue
		}
		recorded := collect(t, Input{Name: path}, []Candidate{Fixed(pol)})
		var recomputed []indexed
		if err := compareEach([]Input{{Name: path}}, pol, []Candidate{Fixed(pol)}, nil, func(i int, p Pair) {
			recomputed = append(recomputed, indexed{i, p})
		}); err != nil {
			t.Fatal(err)
		}
		sort.Slice(recomputed, func(i, j int) bool { return recomputed[i].Pos < recomputed[j].Pos })
		if len(recorded) != len(recomputed) {
			t.Fatalf("%s: %d pairs recorded, %d recomputed", file, len(recorded), len(recomputed))
		}
		for i := range recorded {
			r, c := recorded[i].Baseline, recomputed[i].Baseline
			if r.Verdict != c.Verdict || r.Check != c.Check || r.Grant != c.Grant {
				t.Errorf("%s: call %s recorded %s by %s (grant %q), recomputed %s by %s (grant %q)", file, recorded[i].ID,
					r.Verdict, r.Check, r.Grant, c.Verdict, c.Check, c.Grant)
			}
			if r.Check == engine.CheckApproval {
				settled++
			}
		}
	}
	if settled < 5 {
		t.Errorf("only %d calls settled by a grant: too few to stand for the fixtures", settled)
	}
}
