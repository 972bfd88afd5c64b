package chainfix

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"bailiff/audit"
	"bailiff/chain"
	"bailiff/engine"
	"bailiff/replay"
)

// log is a recorded log in memory: its lines and its evidence.
type log struct {
	lines    [][]byte
	evidence map[string][]byte // digest -> content
	purged   []string          // digests a purge removed: the store marks them
}

func (l *log) clone() *log {
	c := &log{evidence: map[string][]byte{}}
	for _, ln := range l.lines {
		c.lines = append(c.lines, append([]byte(nil), ln...))
	}
	for k, v := range l.evidence {
		c.evidence[k] = v
	}
	return c
}

func record(pol *engine.Policy, secret []byte, approvers map[string]string, trace string) (*log, error) {
	data, err := os.ReadFile(trace)
	if err != nil {
		return nil, err
	}
	events, err := replay.ParseTrace(filepath.Base(trace), bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "chainfix")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	var buf bytes.Buffer
	r := &audit.Recorder{Policy: pol, Log: chain.NewWriter(&buf, chain.None), Evidence: chain.OpenEvidence(tmp), Secret: secret, Approvers: approvers}
	if err := r.Record(filepath.Base(trace), events); err != nil {
		return nil, err
	}
	l := &log{evidence: map[string][]byte{}, lines: bytes.Split(bytes.TrimSuffix(buf.Bytes(), []byte("\n")), []byte("\n"))}
	ev := chain.OpenEvidence(tmp)
	ds, err := ev.Digests()
	if err != nil {
		return nil, err
	}
	for _, d := range ds {
		b, err := ev.Get(d)
		if err != nil {
			return nil, err
		}
		l.evidence[d] = b
	}
	return l, nil
}

func records(l *log) []chain.Record {
	var out []chain.Record
	for _, ln := range l.lines {
		r, err := chain.Parse(ln)
		if err != nil {
			panic(err) // only called on logs as recorded
		}
		out = append(out, r)
	}
	return out
}

// find returns the index of the call record of call id.
func find(l *log, id string) int {
	for i, r := range records(l) {
		if r.Kind == chain.KindCall && bytes.Contains(r.Body, []byte(`"call":"`+id+`"`)) {
			return i
		}
	}
	panic("no call " + id)
}

// rewrite decodes every record of l into its typed body, lets edit change
// it, and writes a new, consistent chain: every hash and link recomputed.
func rewrite(l *log, edit func(rec *chain.Record, body any)) (*log, error) {
	var buf bytes.Buffer
	w := chain.NewWriter(&buf, chain.None)
	for _, rec := range records(l) {
		var body any
		switch rec.Kind {
		case chain.KindSession:
			body = &audit.SessionBody{}
		case chain.KindCall:
			body = &audit.CallBody{}
		case chain.KindGrant:
			body = &audit.GrantBody{}
		case chain.KindResult:
			body = &audit.ResultBody{}
		case chain.KindTools:
			body = &audit.ToolsBody{}
		case chain.KindEnd:
			body = &audit.EndBody{}
		default:
			return nil, fmt.Errorf("cannot rewrite a %s record", rec.Kind)
		}
		if err := chain.DecodeBody(rec.Body, body); err != nil {
			return nil, err
		}
		edit(&rec, body)
		if _, err := w.Append(rec.TS, rec.Session, rec.Kind, body); err != nil {
			return nil, err
		}
	}
	out := l.clone()
	out.lines = bytes.Split(bytes.TrimSuffix(buf.Bytes(), []byte("\n")), []byte("\n"))
	return out, nil
}

func join(lines [][]byte) []byte {
	var b bytes.Buffer
	for _, l := range lines {
		b.Write(l)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

func write(dir, name string, l *log) error {
	data := join(l.lines)
	if strings.HasSuffix(name, "_torn_tail") {
		data = bytes.TrimSuffix(data, []byte("\n"))
	}
	p := filepath.Join(dir, name+".jsonl")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		return err
	}
	ev := chain.EvidenceDir(p)
	if err := os.RemoveAll(ev); err != nil {
		return err
	}
	if err := os.MkdirAll(ev, 0o755); err != nil {
		return err
	}
	digests := make([]string, 0, len(l.evidence))
	for d := range l.evidence {
		digests = append(digests, d)
	}
	sort.Strings(digests)
	for _, d := range digests {
		if err := os.WriteFile(filepath.Join(ev, strings.TrimPrefix(d, "sha256:")), l.evidence[d], 0o644); err != nil {
			return err
		}
	}
	for _, d := range l.purged {
		if err := os.WriteFile(filepath.Join(ev, strings.TrimPrefix(d, "sha256:")+".purged"), nil, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Files lists every file Generate writes under dir, relative to it, so a
// test can compare a fresh generation with the committed one.
func Files(dir string) ([]string, error) {
	var out []string
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if info.IsDir() {
			if rel == "src" {
				return filepath.SkipDir
			}
			return nil
		}
		out = append(out, rel)
		return nil
	})
	sort.Strings(out)
	return out, err
}
