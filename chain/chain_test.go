package chain

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"golang.org/x/mod/sumdb/tlog"
)

var t0 = time.Date(2026, 11, 3, 9, 0, 0, 123456789, time.UTC)

// sample writes a small log of every kind and returns its bytes.
func sample(t testing.TB, n int) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := NewWriter(&buf, None)
	bodies := []struct {
		kind Kind
		body any
	}{
		{KindSession, &testSession{Server: "mail", Principal: testPrincipal{Subject: "ana"}, PolicyVersion: "sha256:00", Policy: "{}", Tools: []testTool{{Name: "send_email"}}, Engine: "e"}},
		{KindCall, &testCall{Call: "c1", Tool: "send_email", Args: map[string]any{"to": "a@b.example", "n": 1}, Digest: "sha256:x", testDecision: testDecision{Verdict: "deny", Check: "taint", Reason: "<tainted> & \"quoted\""}}},
		{KindResult, &testResult{Call: "c1", Server: "mail", Tool: "send_email", Status: "ok", Content: "sha256:y", Size: 3}},
		{KindGrant, &testGrant{Grant: "g", Call: "c1", Tool: "send_email", Digest: "sha256:x", Approver: "lee", Answer: "approve", Expires: "2026-11-03T09:15:00.000000000Z"}},
		{KindEnd, nil},
	}
	for i := 0; i < n; i++ {
		b := bodies[i%len(bodies)]
		if _, err := w.Append(t0.Add(time.Duration(i)*time.Millisecond), "s\u00e9ssion \"1\"", b.kind, b.body); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

func lines(b []byte) [][]byte {
	return bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
}

func TestParseRoundTrip(t *testing.T) {
	data := sample(t, 10)
	var prev tlog.Hash
	for i, line := range lines(data) {
		r, err := Parse(line)
		if err != nil {
			t.Fatalf("line %d: %v\n%s", i, err, line)
		}
		if r.Seq != int64(i) || r.Prev != prev {
			t.Errorf("line %d: seq %d prev %x", i, r.Seq, r.Prev[:4])
		}
		if !bytes.Equal(r.Line(), line) {
			t.Errorf("line %d does not re-encode to itself", i)
		}
		prev = r.Hash
	}
	if !bytes.HasPrefix(data, []byte(`{"v":1,"seq":0,"ts":"2026-11-03T09:00:00.123456789Z","session":"séssion \"1\"","kind":"session","server":"mail"`)) {
		t.Errorf("unexpected first line: %s", lines(data)[0])
	}
	if !bytes.Contains(data, []byte(`"reason":"<tainted> & \"quoted\""`)) {
		t.Error("bodies must be written without HTML escaping")
	}
}

func TestParseRejects(t *testing.T) {
	good := string(lines(sample(t, 2))[1])
	// reseal recomputes the hash of an edited line, so each case fails for
	// its own reason and not merely for a bad hash.
	reseal := func(s string) string {
		b := []byte(s)
		if len(b) < hashedTail {
			return s
		}
		h := hashOfPrefix(b)
		copy(b[len(b)-66:len(b)-2], h)
		return string(b)
	}
	cases := map[string]string{
		"empty":           "",
		"not json":        "hello",
		"version 2":       reseal(strings.Replace(good, `{"v":1,`, `{"v":2,`, 1)),
		"leading zero":    reseal(strings.Replace(good, `"seq":1,`, `"seq":01,`, 1)),
		"short fraction":  reseal(strings.Replace(good, `.124456789Z`, `.124Z`, 1)),
		"space":           reseal(strings.Replace(good, `"kind":"call"`, `"kind": "call"`, 1)),
		"unknown kind":    reseal(strings.Replace(good, `"kind":"call"`, `"kind":"cal"`, 1)),
		"escaped session": reseal(strings.Replace(good, `"session":"séssion`, `"session":"s\u00e9ssion`, 1)),
		"upper hex":       strings.Replace(good, good[len(good)-66:len(good)-2], strings.ToUpper(good[len(good)-66:len(good)-2]), 1),
		"bad hash":        good[:len(good)-3] + `0"}`,
		"fields swapped":  reseal(strings.Replace(good, `{"v":1,"seq":1,`, `{"seq":1,"v":1,`, 1)),
		"trailing brace":  reseal(good[:len(good)-suffixLen] + `,}` + good[len(good)-suffixLen:]),
		"kind twice":      reseal(strings.Replace(good, `"kind":"call",`, `"kind":"result","kind":"call",`, 1)),
		"escaped kind":    reseal(strings.Replace(good, `"kind":"call",`, `"kind":"result","ki\u006ed":"call",`, 1)),
	}
	for name, line := range cases {
		t.Run(name, func(t *testing.T) {
			if line == good {
				t.Fatal("the case did not change the line")
			}
			if _, err := Parse([]byte(line)); err == nil {
				t.Errorf("accepted: %s", line)
			}
		})
	}
	var b testCall
	r, _ := Parse([]byte(good))
	if err := DecodeBody(r.Body, &b); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{
		"duplicate key": strings.Replace(string(r.Body), `"call":"c1",`, `"call":"c1","call":"c1",`, 1),
		"reordered":     strings.Replace(string(r.Body), `"call":"c1","tool":"send_email"`, `"tool":"send_email","call":"c1"`, 1),
		"unknown field": strings.Replace(string(r.Body), `"call":"c1",`, `"call":"c1","extra":1,`, 1),
		"case folded":   strings.Replace(string(r.Body), `"call":"c1",`, `"Call":"c1",`, 1),
		"escaped ascii": strings.Replace(string(r.Body), `"tool":"send_email"`, `"tool":"send\u005femail"`, 1),
		"header key":    strings.Replace(string(r.Body), `"call":"c1",`, `"call":"c1","kind":"call",`, 1),
	} {
		if err := DecodeBody([]byte(body), &testCall{}); err == nil {
			t.Errorf("%s: body accepted: %s", name, body)
		}
	}
}

func hashOfPrefix(line []byte) []byte {
	var out [64]byte
	_, _, _, actual, _ := readHeader(line)
	const hexd = "0123456789abcdef"
	for i, c := range actual {
		out[2*i], out[2*i+1] = hexd[c>>4], hexd[c&15]
	}
	return out[:]
}

func TestIntegrityFindsFirstBadRecord(t *testing.T) {
	data := sample(t, 12)
	ls := lines(data)
	join := func(ls [][]byte) []byte { return append(bytes.Join(ls, []byte("\n")), '\n') }
	edited := append([][]byte(nil), ls...)
	edited[5] = bytes.Replace(edited[5], []byte("mail"), []byte("mall"), 1)
	swapped := append([][]byte(nil), ls...)
	swapped[3], swapped[4] = swapped[4], swapped[3]
	deleted := append(append([][]byte(nil), ls[:7]...), ls[8:]...)
	repeated := append(append([][]byte(nil), ls[:8]...), ls[7:]...)
	cases := []struct {
		name string
		data []byte
		seq  int64
		torn bool
	}{
		{"edited", join(edited), 5, false},
		{"swapped", join(swapped), 3, false},
		{"deleted", join(deleted), 7, false},
		{"repeated", join(repeated), 8, false},
		{"torn", data[:len(data)-10], 11, true},
		{"garbage tail", append(append([]byte{}, data...), "\x00\x00\x00"...), 12, true},
		{"due record cut short", append(append([]byte{}, data...), `{"v":1,"seq":12,"ts":"20`...), 12, true},
		// An unterminated line that is no start of the record due is an
		// edit, not a tear: repair would cut it away.
		{"foreign tail", append(append([]byte{}, data...), "this is not a record"...), 12, false},
		{"wrong seq cut short", append(append([]byte{}, data...), `{"v":1,"seq":7,"ts":"2026-01-01T00:00:00Z","sess`...), 12, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := VerifyIntegrity(bytes.NewReader(c.data))
			var ve *VerifyError
			if !errors.As(err, &ve) {
				t.Fatalf("VerifyIntegrity: %v, want a *VerifyError", err)
			}
			if ve.Seq != c.seq || ve.Torn != c.torn {
				t.Errorf("VerifyIntegrity: record %d torn %v (%v), want %d %v", ve.Seq, ve.Torn, ve, c.seq, c.torn)
			}
			// The full reader names the same record.
			rd := NewReader(bytes.NewReader(c.data))
			for {
				if _, err = rd.Next(); err != nil {
					break
				}
			}
			if !errors.As(err, &ve) || ve.Seq != c.seq {
				t.Errorf("Reader: %v, want record %d", err, c.seq)
			}
		})
	}
	sum, err := VerifyIntegrity(bytes.NewReader(data))
	if err != nil || sum.Records != 12 {
		t.Fatalf("clean log: %v, %d records", err, sum.Records)
	}
}

func TestFrontierMatchesTlog(t *testing.T) {
	var f Frontier
	tree := &Tree{}
	for n := 0; n <= 70; n++ {
		want, err := tlog.TreeHash(int64(n), tree.stored)
		if err != nil {
			t.Fatal(err)
		}
		if got := f.Root(); got != want {
			t.Fatalf("size %d: frontier root %x, tlog %x", n, got[:4], want[:4])
		}
		leaf := tlog.RecordHash([]byte{byte(n), byte(n >> 8)})
		f.Add(leaf)
		if err := tree.add(leaf); err != nil {
			t.Fatal(err)
		}
	}
}

func TestCheckpointSignAndOpen(t *testing.T) {
	skey, vkey, err := GenerateKey(rand.Reader, "audit.example/log")
	if err != nil {
		t.Fatal(err)
	}
	_, otherV, _ := GenerateKey(rand.Reader, "audit.example/log")
	_, otherName, _ := GenerateKey(rand.Reader, "other.example/log")
	c := Checkpoint{Origin: "audit.example/log", Size: 7, Root: tlog.RecordHash([]byte("x"))}
	signed, err := SignCheckpoint(c, skey)
	if err != nil {
		t.Fatal(err)
	}
	got, err := OpenCheckpoint(signed, vkey)
	if err != nil || got != c {
		t.Fatalf("OpenCheckpoint = %v, %v", got, err)
	}
	if _, err := OpenCheckpoint(signed, otherV); err == nil {
		t.Error("a checkpoint opened with another key")
	}
	if _, err := OpenCheckpoint(signed, otherName); err == nil {
		t.Error("a checkpoint opened with another log's key")
	}
	forged := bytes.Replace(signed, []byte("\n7\n"), []byte("\n8\n"), 1)
	if _, err := OpenCheckpoint(forged, vkey); err == nil {
		t.Error("an edited checkpoint verified")
	}
	if _, err := SignCheckpoint(Checkpoint{Origin: "not-the-key", Size: 1}, skey); err == nil {
		t.Error("signed a checkpoint for another origin")
	}
	for _, bad := range []string{
		"", "o\n7\n", "o\n07\n" + c.Text()[len("audit.example/log\n7\n"):], " o\n7\nAAAA\n",
		"o\n-1\n" + c.Text()[len("audit.example/log\n7\n"):], c.Text() + "extension\n", "o\n7\nAAAA\n",
	} {
		if _, err := ParseCheckpoint([]byte(bad)); err == nil {
			t.Errorf("ParseCheckpoint accepted %q", bad)
		}
	}
}

func TestProofs(t *testing.T) {
	data := sample(t, 23)
	tree, recs, err := ReadTree(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	skey, vkey, _ := GenerateKey(rand.Reader, "audit.example/log")
	for _, size := range []int64{1, 2, 7, 8, 23} {
		root, _ := tree.Root(size)
		cp := Checkpoint{Origin: "audit.example/log", Size: size, Root: root}
		signed, err := SignCheckpoint(cp, skey)
		if err != nil {
			t.Fatal(err)
		}
		for seq := int64(0); seq < size; seq++ {
			b, err := tree.NewBundle(recs[seq], signed, cp)
			if err != nil {
				t.Fatalf("size %d seq %d: %v", size, seq, err)
			}
			enc, _ := marshalBody(b)
			pb, err := ParseBundle(enc)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := VerifyBundle(pb, vkey); err != nil {
				t.Fatalf("size %d seq %d: %v", size, seq, err)
			}
			// The same proof must not pass for another record.
			other := *pb
			other.Record, other.Seq = string(recs[(seq+1)%size].Line()), (seq+1)%size
			if _, _, err := VerifyBundle(&other, vkey); err == nil && size > 1 {
				t.Fatalf("size %d: proof of %d accepted for %d", size, seq, other.Seq)
			}
		}
		for old := int64(0); old <= size; old++ {
			oroot, _ := tree.Root(old)
			p, err := tree.ProveConsistency(old, size)
			if err != nil {
				t.Fatal(err)
			}
			if err := checkConsistency(p, Checkpoint{Origin: "o", Size: old, Root: oroot}, cp.withOrigin("o")); err != nil {
				t.Fatalf("%d -> %d: %v", old, size, err)
			}
			if old > 0 && old < size {
				bad := tlog.RecordHash([]byte("rewritten"))
				if err := checkConsistency(p, Checkpoint{Origin: "o", Size: old, Root: bad}, cp.withOrigin("o")); err == nil {
					t.Fatalf("%d -> %d: a rewritten prefix passed", old, size)
				}
			}
		}
	}
}

func (c Checkpoint) withOrigin(o string) Checkpoint { c.Origin = o; return c }

func TestWriterOpenResumeAndLock(t *testing.T) {
	name := filepath.Join(t.TempDir(), "audit.jsonl")
	w, err := Open(name, Sync)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, err := w.Append(t0, "s", KindEnd, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Open(name, Sync); !errors.Is(err, ErrLocked) {
		t.Errorf("second writer: %v, want ErrLocked", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	w, err = Open(name, Batch)
	if err != nil {
		t.Fatal(err)
	}
	if w.Next() != 3 {
		t.Errorf("reopened log continues at %d, want 3", w.Next())
	}
	if _, err := w.Append(t0, "s", KindEnd, &testEnd{Reason: "done"}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	data, _ := os.ReadFile(name)
	if sum, err := VerifyIntegrity(bytes.NewReader(data)); err != nil || sum.Records != 4 {
		t.Fatalf("after reopening: %v, %d records", err, sum.Records)
	}
	// A torn tail must be repaired before anything is appended.
	if err := os.WriteFile(name, data[:len(data)-5], 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(name, Sync); err == nil {
		t.Fatal("opened a log with a torn tail for appending")
	}
	var fixed bytes.Buffer
	done, err := Repair(bytes.NewReader(data[:len(data)-5]), &fixed)
	if err != nil || done.Kept != 3 || done.Cut == 0 || done.Newline {
		t.Fatalf("Repair = %+v, %v", done, err)
	}
	if !bytes.Equal(fixed.Bytes(), data[:bytes.LastIndexByte(data[:len(data)-1], '\n')+1]) {
		t.Error("repair did not keep exactly the whole records")
	}
	edited := bytes.Replace(data, []byte(`"kind":"end"`), []byte(`"kind":"eNd"`), 1)
	if _, err := Repair(bytes.NewReader(edited), io.Discard); err == nil {
		t.Error("repair accepted an edited record")
	}
}

func TestWriterRefusesAfterFailure(t *testing.T) {
	w := NewWriter(failingWriter{}, Sync)
	if _, err := w.Append(t0, "s", KindEnd, nil); err == nil {
		t.Fatal("append to a failing file succeeded")
	}
	if _, err := w.Append(t0, "s", KindEnd, nil); err == nil {
		t.Fatal("append after a failed write succeeded")
	}
	if w.Next() != 0 {
		t.Errorf("a failed append advanced seq to %d", w.Next())
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestParseDurability(t *testing.T) {
	for in, want := range map[string]Durability{"": Sync, "sync": Sync, "batch": Batch, "none": None} {
		if got, err := ParseDurability(in); err != nil || got != want {
			t.Errorf("ParseDurability(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := ParseDurability("fast"); err == nil {
		t.Error(`ParseDurability("fast") accepted`)
	}
}

func TestEvidence(t *testing.T) {
	e := OpenEvidence(filepath.Join(t.TempDir(), "ev"))
	d, err := e.Put([]byte(`{"text":"hello"}`), true)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := e.Get(d); err != nil || string(got) != `{"text":"hello"}` {
		t.Fatalf("Get = %q, %v", got, err)
	}
	alter(t, e, d)
	var ee *EvidenceError
	if _, err := e.Get(d); !errors.As(err, &ee) {
		t.Errorf("altered evidence: %v, want *EvidenceError", err)
	}
	if err := e.Remove(d); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Get(d); !errors.Is(err, ErrPurged) {
		t.Errorf("purged evidence: %v, want ErrPurged", err)
	}
	if _, err := e.Get("sha256:../../etc/passwd"); err == nil || errors.Is(err, ErrPurged) {
		t.Errorf("a digest naming a path was accepted: %v", err)
	}
}

func TestRawField(t *testing.T) {
	obj := []byte(`{"call":"c\"1,","tool":"t","args":{"a":[1,{"args":"x"}],"b":"}"},"digest":"d"}`)
	cases := map[string]string{"call": `"c\"1,"`, "args": `{"a":[1,{"args":"x"}],"b":"}"}`, "digest": `"d"`}
	for key, want := range cases {
		got, ok := RawField(obj, key)
		if !ok || string(got) != want {
			t.Errorf("RawField(%s) = %s, %v; want %s", key, got, ok, want)
		}
	}
	if _, ok := RawField(obj, "a"); ok {
		t.Error("RawField found a nested key at the top level")
	}
}

// threeEnds is a log of three end records, r0 to r2.
func threeEnds(t *testing.T) []byte {
	t.Helper()
	var log bytes.Buffer
	w := NewWriter(&log, Sync)
	for i := 0; i < 3; i++ {
		if _, err := w.Append(t0, "s", KindEnd, &testEnd{Reason: fmt.Sprint("r", i)}); err != nil {
			t.Fatal(err)
		}
	}
	return log.Bytes()
}

// A writer stopped between a record and its newline leaves a whole
// record: repair keeps it. An edited last record left without its newline
// must not pass for a tear, or repair would cut the evidence of the edit.
func TestRepairKeepsAWholeLastRecord(t *testing.T) {
	data := threeEnds(t)
	unterminated := data[:len(data)-1]
	var fixed bytes.Buffer
	done, err := Repair(bytes.NewReader(unterminated), &fixed)
	if err != nil || done.Kept != 3 || done.Cut != 0 || !done.Newline {
		t.Fatalf("Repair = %+v, %v; want 3 kept, nothing cut, newline added", done, err)
	}
	if !bytes.Equal(fixed.Bytes(), data) {
		t.Error("repair did not give back the log with its newline")
	}

	edited := bytes.Replace(unterminated, []byte(`"r2"`), []byte(`"r9"`), 1)
	if bytes.Equal(edited, unterminated) {
		t.Fatal("test did not edit the last record")
	}
	var ve *VerifyError
	if _, err := Repair(bytes.NewReader(edited), io.Discard); !errors.As(err, &ve) || ve.Seq != 2 {
		t.Errorf("repair of an edited unterminated last record: %v, want a VerifyError at seq 2", err)
	}
	// Cut short, the edit is no longer JSON: its seq still gives it away.
	cut := append(append([]byte{}, data[:bytes.LastIndexByte(unterminated, '\n')+1]...), `{"v":1,"seq":7,"ts":"2026-0`...)
	if _, err := Repair(bytes.NewReader(cut), io.Discard); !errors.As(err, &ve) || ve.Seq != 2 || ve.Torn {
		t.Errorf("repair of a cut fragment that is not record 2: %v, want a VerifyError at seq 2", err)
	}

	clean := bytes.Buffer{}
	done, err = Repair(bytes.NewReader(data), &clean)
	if err != nil || done.Kept != 3 || done.Cut != 0 || done.Newline || !bytes.Equal(clean.Bytes(), data) {
		t.Errorf("repair of a clean log = %+v, %v", done, err)
	}
}

// TestHeldByWriter: a log renamed away is still known to be held while
// its writer has it open, and not after.
func TestHeldByWriter(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no flock")
	}
	name := filepath.Join(t.TempDir(), "audit.jsonl")
	w, err := Open(name, Sync)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append(time.Unix(1, 0), "s", KindEnd, nil); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := os.Rename(name, name+".1"); err != nil {
		t.Fatal(err)
	}
	if !HeldByWriter(f) {
		t.Error("a held log renamed away: not held")
	}
	w.Close()
	if HeldByWriter(f) {
		t.Error("a log whose writer closed it: still held")
	}
}

// TestReaderLinesPastItsBuffer: the reader starts with a small buffer and
// grows it to the longest line, whatever sizes the lines come in and
// however little each read returns: every record reads back whole, in
// order.
func TestReaderLinesPastItsBuffer(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf, None)
	sizes := []int{10, 64<<10 - 300, 64 << 10, 64<<10 + 1, 3 << 20, 5, 200 << 10, 1}
	for i, n := range sizes {
		body := &testCall{Call: fmt.Sprintf("c%d", i), Tool: "t", Args: map[string]any{"text": strings.Repeat("x", n)}, Digest: "sha256:x"}
		if _, err := w.Append(t0, "s", KindCall, body); err != nil {
			t.Fatal(err)
		}
	}
	data := buf.Bytes()
	for _, r := range []io.Reader{bytes.NewReader(data), iotest.HalfReader(bytes.NewReader(data)), iotest.DataErrReader(bytes.NewReader(data))} {
		rd := NewReader(r)
		for i, line := range lines(data) {
			rec, err := rd.Next()
			if err != nil {
				t.Fatalf("record %d: %v", i, err)
			}
			if !bytes.Equal(rec.Line(), line) {
				t.Fatalf("record %d: %d bytes, want %d", i, len(rec.Line()), len(line))
			}
		}
		if _, err := rd.Next(); err != io.EOF {
			t.Fatalf("after the last record: %v", err)
		}
	}
}

// TestRepairRefusesBytesPastARecord: a writer stops before a record's
// newline, never past its end, so a whole record followed by anything
// but its newline (a byte in the newline's place, a brace, white space)
// is an edit: verify says so rather than call it torn, and repair refuses
// it rather than cut a whole record as a tear. A record cut short, even
// just before its last brace, or followed only by the zeros a crash
// leaves, is still a tear.
func TestRepairRefusesBytesPastARecord(t *testing.T) {
	data := threeEnds(t)
	whole := data[:len(data)-1]
	for name, tail := range map[string]string{"X": "X", "brace": "}", "space": " ", "tab and X": "\tX", "a second start": `{"v":1`} {
		bad := append(append([]byte{}, whole...), tail...)
		var ve *VerifyError
		if done, err := Repair(bytes.NewReader(bad), io.Discard); !errors.As(err, &ve) || ve.Seq != 2 || ve.Torn {
			t.Errorf("%s: repair = %+v, %v; want a refusal at seq 2, not a tear", name, done, err)
		}
		_, err := VerifyIntegrity(bytes.NewReader(bad))
		if !errors.As(err, &ve) || ve.Torn || !strings.Contains(ve.Reason, "never writes past a record's end") {
			t.Errorf("%s: VerifyIntegrity = %v; want the line named as no tear", name, err)
		}
		rd := NewReader(bytes.NewReader(bad))
		var nerr error
		for nerr == nil {
			_, nerr = rd.Next()
		}
		if err = nerr; !errors.As(err, &ve) || ve.Seq != 2 || ve.Torn || !strings.Contains(ve.Reason, "never writes past a record's end") {
			t.Errorf("%s: Next = %v; want the line named as no tear", name, err)
		}
	}
	for name, n := range map[string]int{"before the brace": 1, "before the hash's quote": 2, "mid-hash": 30} {
		torn := whole[:len(whole)-n]
		if done, err := Repair(bytes.NewReader(torn), io.Discard); err != nil || done.Kept != 2 || done.Cut != int64(len(torn)-bytes.LastIndexByte(torn, '\n')-1) {
			t.Errorf("%s: repair = %+v, %v; want record 2 cut as a tear", name, done, err)
		}
	}
	zeros := append(append([]byte{}, whole...), 0, 0, 0)
	if done, err := Repair(bytes.NewReader(zeros), io.Discard); err != nil || done.Kept != 2 {
		t.Errorf("a whole record then zeros: repair = %+v, %v; want it cut as a crash leaves it", done, err)
	}
	// What no writer writes, cut short or not, is refused: an edited
	// record then zeros, a wrong closing byte, a hash that is not hex or
	// not the record's, zeros in the middle.
	last := bytes.LastIndexByte(whole, '\n') + 1
	edited := bytes.Replace(whole[last:], []byte(`"r2"`), []byte(`"r9"`), 1)
	hashAt := len(whole) - 2 - 64
	for name, bad := range map[string][]byte{
		"an edited record then zeros": append(append(append([]byte{}, whole[:last]...), edited...), 0, 0),
		"a wrong closing byte":        append(append([]byte{}, whole[:len(whole)-1]...), "]xyz"...),
		"a hash that is not hex":      append(append([]byte{}, whole[:len(whole)-4]...), "ZZ"...),
		"a hash not the record's":     append(append([]byte{}, whole[:hashAt]...), strings.Repeat("0", 64)...),
		"zeros in the middle":         append(append([]byte{}, whole[:last+40]...), "\x00\x00junk"...),
	} {
		var ve *VerifyError
		if done, err := Repair(bytes.NewReader(bad), io.Discard); !errors.As(err, &ve) || ve.Seq != 2 || ve.Torn {
			t.Errorf("%s: repair = %+v, %v; want a refusal at seq 2", name, done, err)
		}
	}
}

// TestRepairCutsATearWhateverTheArguments: a call whose arguments hold a
// "prev" (or "hash") key of 64 hex digits, cut anywhere, is a tear: the
// checks of a fragment's own prev and hash do not mistake the body's.
func TestRepairCutsATearWhateverTheArguments(t *testing.T) {
	hex64 := strings.Repeat("ab", 32)
	var log bytes.Buffer
	w := NewWriter(&log, Sync)
	if _, err := w.Append(t0, "s", KindEnd, &testEnd{Reason: "r0"}); err != nil {
		t.Fatal(err)
	}
	body := map[string]any{"args": map[string]any{"a": 1, "hash": hex64, "prev": hex64, "z": map[string]any{"prev": hex64}}, "tool": "git"}
	if _, err := w.Append(t0, "s", KindCall, body); err != nil {
		t.Fatal(err)
	}
	data := log.Bytes()
	first := bytes.IndexByte(data, '\n') + 1
	for cut := first + 1; cut < len(data)-1; cut++ {
		done, err := Repair(bytes.NewReader(data[:cut]), io.Discard)
		if err != nil || done.Kept != 1 || done.Cut != int64(cut-first) {
			t.Fatalf("cut after %d of %d bytes: repair = %+v, %v; want record 1 cut as a tear", cut-first, len(data)-first, done, err)
		}
	}
}
