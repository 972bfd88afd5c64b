package engine

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/mail"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/net/idna"
)

var updateReaders = flag.Bool("update-readers", false, "rerun Node and Python over the destination corpus and rewrite testdata/readers/readings.jsonl")

// reading is where one reader sends a destination: the URL it parses
// (nil: it refuses the string) and the recipients it finds (nil: it reads
// none).
type reading struct {
	URL  *urlReading `json:"url"`
	Mail []string    `json:"mail"`
}

type urlReading struct {
	Scheme string `json:"scheme"`
	Host   string `json:"host"`
	Port   string `json:"port"`
	Path   string `json:"path"`
	User   bool   `json:"user"`
}

// readingsLine is one line of the golden file: a destination and how
// Node and Python read it.
type readingsLine struct {
	Value  string  `json:"value"`
	Node   reading `json:"node"`
	Python reading `json:"python"`
}

const readingsFile = "testdata/readers/readings.jsonl"

// TestReadersAgreeOnTrustedDestinations: whatever bailiff trusts under a
// trusted_destinations entry, every real reader (Node's WHATWG URL, Go's
// net/url and net/mail, Python's urllib.parse and email.utils, and the
// path readings of servers) sends inside that entry. The corpus is
// generated variants of each entry form; Node's and Python's answers are
// committed (regenerate with -update-readers) and Go's are computed here.
func TestReadersAgreeOnTrustedDestinations(t *testing.T) {
	corpus := readersCorpus()
	if len(corpus) < 500 {
		t.Fatalf("the corpus has %d destinations; it is meant to have at least 500", len(corpus))
	}
	var values []string
	seen := map[string]bool{}
	for _, it := range corpus {
		if !seen[it.value] {
			seen[it.value] = true
			values = append(values, it.value)
		}
	}
	if *updateReaders {
		writeReadings(t, values)
	}
	golden := loadReadings(t)
	if len(golden) != len(values) {
		t.Fatalf("%s holds %d destinations, the corpus %d: go test ./engine -run TestReadersAgree -update-readers", readingsFile, len(golden), len(values))
	}
	live := liveReadings(t, values)
	policies := map[string]*Policy{}
	trusted := 0
	for _, it := range corpus {
		g, ok := golden[it.value]
		if !ok {
			t.Fatalf("%q has no readings in %s: go test ./engine -run TestReadersAgree -update-readers", it.value, readingsFile)
		}
		p := policies[it.entry]
		if p == nil {
			p = mustLoad(t, fmt.Sprintf("version: 1\nrules:\n  - {id: send, tool: send, action: allow}\ntools:\n  send:\n    exfiltrating: true\n    sink_params: [to]\n    trusted_destinations: [%q]\n", it.entry))
			policies[it.entry] = p
		}
		args := map[string]any{"to": it.value}
		s := NewState("s", "srv", Principal{Subject: "ana"}, []ToolDef{{Name: "send"}})
		if d := Decide(p, s, &Call{ID: "c1", ToolRef: ToolRef{Tool: "send"}, Args: args, Digest: ArgsDigest(args)}, t0); d.Verdict != Allow {
			continue
		}
		trusted++
		readers := map[string]reading{"node": g.Node, "python": g.Python, "go": goReading(it.value)}
		if l, ok := live[it.value]; ok {
			readers["node (this machine)"], readers["python (this machine)"] = l.Node, l.Python
		}
		for name, r := range readers {
			if why := outsideEntry(it.entry, it.value, r); why != "" {
				rj, _ := json.Marshal(r)
				t.Errorf("bailiff trusts %q under %q, but %s sends it elsewhere (%s): %s", it.value, it.entry, name, why, rj)
			}
		}
	}
	// A corpus bailiff trusts nothing of would prove nothing.
	if trusted < 60 {
		t.Errorf("bailiff trusts only %d of %d destinations: the corpus lost its trusted forms", trusted, len(corpus))
	}
	t.Logf("%d destinations, %d trusted, each read by Node, Go and Python", len(corpus), trusted)
}

func loadReadings(t *testing.T) map[string]readingsLine {
	t.Helper()
	f, err := os.Open(readingsFile)
	if err != nil {
		t.Fatalf("%v: go test ./engine -run TestReadersAgree -update-readers writes it", err)
	}
	defer f.Close()
	out := map[string]readingsLine{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l readingsLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("%s: %v", readingsFile, err)
		}
		out[l.Value] = l
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// liveReadings runs the Node and Python readers installed here, when both
// are, so that a reader that changed since the golden file was written is
// judged too. A change is logged, not failed: the golden file stays the
// record, and only a trusted value a reader sends elsewhere fails.
func liveReadings(t *testing.T, values []string) map[string]readingsLine {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Log("node is not installed: Node's committed readings only")
		return nil
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Log("python3 is not installed: Python's committed readings only")
		return nil
	}
	in, _ := json.Marshal(values)
	node := runReader(t, in, "node", filepath.Join("testdata", "readers", "read.mjs"))
	py := runReader(t, in, "python3", filepath.Join("testdata", "readers", "read.py"))
	out := map[string]readingsLine{}
	drift := 0
	golden := loadReadings(t)
	for i, v := range values {
		out[v] = readingsLine{Value: v, Node: node[i], Python: py[i]}
		a, _ := json.Marshal(out[v])
		b, _ := json.Marshal(golden[v])
		if !bytes.Equal(a, b) {
			drift++
		}
	}
	if drift > 0 {
		t.Logf("%d destinations read differently here than in %s (another Node or Python version)", drift, readingsFile)
	}
	return out
}

// writeReadings runs the Node and Python readers over values and writes
// the golden file.
func writeReadings(t *testing.T, values []string) {
	t.Helper()
	in, _ := json.Marshal(values)
	node := runReader(t, in, "node", filepath.Join("testdata", "readers", "read.mjs"))
	py := runReader(t, in, "python3", filepath.Join("testdata", "readers", "read.py"))
	if len(node) != len(values) || len(py) != len(values) {
		t.Fatalf("readers answered %d (node) and %d (python) of %d values", len(node), len(py), len(values))
	}
	var b bytes.Buffer
	for i, v := range values {
		line, _ := json.Marshal(readingsLine{Value: v, Node: node[i], Python: py[i]})
		b.Write(line)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(readingsFile, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func runReader(t *testing.T, in []byte, prog, script string) []reading {
	t.Helper()
	cmd := exec.Command(prog, script)
	cmd.Stdin = bytes.NewReader(in)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v", prog, script, err)
	}
	var rs []reading
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var r reading
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("%s: %v", prog, err)
		}
		rs = append(rs, r)
	}
	return rs
}

// goReading is how Go reads v: net/url for a URL, its host as net/http
// dials it (an IP literal as such, a name through UTS-46); and for mail,
// net/url's opaque mailto path unescaped and split on ',', its to, cc and
// bcc query fields, each read by net/mail (as written when it refuses).
func goReading(v string) reading {
	var r reading
	u, err := url.Parse(v)
	if err == nil {
		// net/http dials an IP literal as such and converts a name that is
		// not ASCII with idna.Lookup, refusing the request when it fails.
		h, ok := u.Hostname(), true
		if ip := net.ParseIP(h); ip != nil {
			h = ip.String()
		} else if !isASCII(h) {
			h, err = idna.Lookup.ToASCII(h)
			ok = err == nil
		}
		if ok {
			r.URL = &urlReading{Scheme: strings.ToLower(u.Scheme), Host: h, Port: u.Port(), Path: u.EscapedPath(), User: u.User != nil}
		}
	}
	if !strings.Contains(v, "@") && !strings.HasPrefix(strings.ToLower(v), "mailto:") {
		return r
	}
	fields := []string{v}
	if err == nil && strings.EqualFold(u.Scheme, "mailto") {
		fields = nil
		if p, err := url.PathUnescape(u.Opaque); err == nil {
			fields = append(fields, strings.Split(p, ",")...)
		}
		for k, vs := range u.Query() {
			if k := strings.ToLower(k); k == "to" || k == "cc" || k == "bcc" {
				for _, x := range vs {
					fields = append(fields, strings.Split(x, ",")...)
				}
			}
		}
	}
	for _, f := range fields {
		if strings.TrimSpace(f) == "" {
			continue
		}
		as, err := mail.ParseAddressList(f)
		if err != nil {
			r.Mail = append(r.Mail, strings.TrimSpace(f))
			continue
		}
		for _, a := range as {
			r.Mail = append(r.Mail, a.Address)
		}
	}
	return r
}

// outsideEntry says where reading r of value v leaves trusted entry e, or
// "" when it stays inside.
func outsideEntry(e, v string, r reading) string {
	switch {
	case strings.HasPrefix(e, "@") || !strings.Contains(e, "://") && strings.Contains(e, "@"):
		return mailOutside(e, r.Mail)
	case strings.HasPrefix(e, "domain:") || strings.HasPrefix(e, "*."):
		suffix := strings.TrimPrefix(strings.TrimPrefix(e, "domain:"), "*")
		under := func(h string) bool {
			h = readerHost(h)
			return strings.HasSuffix(h, "."+strings.TrimPrefix(suffix, ".")) || strings.HasPrefix(e, "domain:") && h == suffix
		}
		if r.URL != nil && strings.Contains(v, "://") && (r.URL.User || !under(r.URL.Host)) {
			return fmt.Sprintf("host %q", r.URL.Host)
		}
		if !strings.Contains(v, "://") {
			for _, a := range r.Mail {
				if i := strings.LastIndexByte(a, '@'); i < 0 || routed(a[:i]) || !under(a[i+1:]) {
					return fmt.Sprintf("recipient %q", a)
				}
			}
		}
		return ""
	}
	return prefixOutside(e, r.URL)
}

func mailOutside(e string, addrs []string) string {
	for _, a := range addrs {
		i := strings.LastIndexByte(a, '@')
		if i < 0 || routed(a[:i]) {
			return fmt.Sprintf("recipient %q", a)
		}
		if strings.HasPrefix(e, "@") {
			if readerHost(a[i+1:]) != e[1:] {
				return fmt.Sprintf("recipient %q", a)
			}
		} else if !strings.EqualFold(a, e) {
			return fmt.Sprintf("recipient %q", a)
		}
	}
	return ""
}

// routed tells whether a local part is one relays route on: '%' (the
// percent hack), '!' (a bang path), '@' (a source route), or quotes.
func routed(local string) bool {
	return strings.ContainsAny(local, "%!@\"\\:,<>")
}

func readerHost(h string) string {
	return strings.TrimSuffix(strings.ToLower(h), ".")
}

// prefixOutside checks a URL reading against a URL prefix entry: scheme,
// host and port equal, no user info, and the path under the prefix as
// each server reads it (dot segments removed as written, decoded, and
// with ';' parameters stripped first, as Tomcat does).
func prefixOutside(e string, u *urlReading) string {
	if u == nil {
		return ""
	}
	pu, _ := url.Parse(e)
	port, ok := canonicalPort(u.Port, u.Scheme)
	if !ok {
		return fmt.Sprintf("port %q", u.Port)
	}
	switch {
	case u.Scheme != pu.Scheme:
		return fmt.Sprintf("scheme %q", u.Scheme)
	case readerHost(u.Host) != pu.Hostname():
		return fmt.Sprintf("host %q", u.Host)
	case port != pu.Port():
		return fmt.Sprintf("port %q", u.Port)
	case u.User:
		return "user info"
	}
	for name, p := range map[string]string{
		"as written": removeDots(u.Path),
		"decoded":    cleanDecoded(u.Path),
		"Tomcat":     cleanDecoded(stripParams(u.Path)),
	} {
		if !strings.HasPrefix(p+"/", pu.Path) {
			return fmt.Sprintf("path %q (%s: %q)", u.Path, name, p)
		}
	}
	return ""
}

// removeDots is RFC 3986's remove_dot_segments.
func removeDots(p string) string {
	var out []string
	segs := strings.Split(p, "/")
	for i, s := range segs {
		switch s {
		case ".", "..":
			if s == ".." && len(out) > 1 {
				out = out[:len(out)-1]
			}
			if i == len(segs)-1 {
				out = append(out, "")
			}
		default:
			out = append(out, s)
		}
	}
	return strings.Join(out, "/")
}

func cleanDecoded(p string) string {
	// Decoded as a server decodes: a bad escape stays as written.
	d := p
	for i := strings.Index(d, "%"); i >= 0 && i+2 < len(d); {
		if x, err := url.PathUnescape(d[i : i+3]); err == nil {
			d = d[:i] + x + d[i+3:]
		}
		k := strings.Index(d[i+1:], "%")
		if k < 0 {
			break
		}
		i += 1 + k
	}
	c := path.Clean("/" + d)
	if strings.HasSuffix(d, "/") && c != "/" {
		c += "/"
	}
	return c
}

func stripParams(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		if k := strings.IndexByte(s, ';'); k >= 0 {
			segs[i] = s[:k]
		}
	}
	return strings.Join(segs, "/")
}
