package engine

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// FuzzLoad: no policy text panics the loader, and every accepted policy's
// canonical form loads to the same canonical form.
func FuzzLoad(f *testing.F) {
	files, _ := filepath.Glob("../fixtures/policies/*.yaml")
	for _, file := range files {
		data, _ := os.ReadFile(file)
		f.Add(data)
	}
	for _, name := range packNames() {
		data, _ := packText(name)
		f.Add(data)
	}
	f.Add([]byte(listPolicy))
	f.Add([]byte(globPolicy))
	f.Add([]byte("version: 1\nrules:\n  - {id: a, tool: '*', action: ask, when: [{arg: 'x[0].y', gte: 3}]}\n"))
	f.Add([]byte("version: 1\nrules:\n  - {id: a, tool: '*', action: allow, rate: 5/m, rate_by: tenant}\ntools:\n  x: {cost: 0, rate: 1/s}\n  'y*': {cost: 3}\ntenants:\n  acme: {ceiling: 9, window: month, zone: Asia/Kolkata}\n  '*': {ceiling: 2, window: 90m}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Load("fuzz.yaml", data)
		if err != nil {
			return
		}
		q, err := Load("canonical", p.Canonical())
		if err != nil {
			t.Fatalf("canonical form does not load: %v\n%s", err, p.Canonical())
		}
		if !bytes.Equal(p.Canonical(), q.Canonical()) {
			t.Fatalf("canonical form is not a fixed point:\n%s\n%s", p.Canonical(), q.Canonical())
		}
	})
}

// FuzzParseArgs: accepted arguments round-trip through their canonical form.
func FuzzParseArgs(f *testing.F) {
	f.Add([]byte(`{"to":["a@b.example",{"email":"c@d.example"}],"n":1.50,"x":null,"y":true}`))
	f.Add([]byte(`{"path":"/etc/passwd","Path":"/ok"}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		m, err := parseArgs(raw)
		if err != nil {
			return
		}
		c := CanonicalJSON(m)
		m2, err := parseArgs(c)
		if err != nil {
			t.Fatalf("canonical args do not parse: %v\n%s", err, c)
		}
		if !bytes.Equal(CanonicalJSON(m2), c) {
			t.Fatalf("canonical form is not a fixed point: %s", c)
		}
	})
}

// FuzzNormalize: normalization is idempotent, so output and destinations
// meet in the same form however often either was normalized.
func FuzzNormalize(f *testing.F) {
	for _, s := range []string{"ＡＴＴＡＣＫＥＲ＠ｅｖｉｌ", "Straße", "ﬁ", "a\u0301", "ǅ", "\u1e9e", " x  y "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n := Normalize(s)
		if Normalize(n) != n {
			t.Fatalf("Normalize(%q) = %q, but Normalize of that is %q", s, n, Normalize(n))
		}
	})
}

// FuzzDecide: any arguments and output give a verdict, the same one twice,
// and a miss never turns into a silent allow for an exfiltrating tool.
func FuzzDecide(f *testing.F) {
	p := mustLoad(f, `version: 1
packs: [mail]
rules:
  - {id: deny-comp, tool: send_email, action: deny, when: [{arg: to, regex: ".*@competitor\\.example"}]}
  - {id: send, tool: send_email, action: allow}
  - {id: any, tool: "*", action: allow, when: [{arg: n, lt: 10}]}
tools:
  send_email:
    trusted_destinations: ["@corp.example", "https://ok.example/a/", "*.irs.gov", "domain:ups.com"]
  stage:
    not_destinations: [data.email, rows.channel, to]
`)
	f.Add([]byte(`{"data":{"email":"a@evil.example"},"rows":[{"channel":"x","to":"y"}]}`), "a@evil.example y", "rows[0].to")
	f.Add([]byte(`{"to":"attacker@evil.example"}`), "mail attacker@evil.example", "to")
	f.Add([]byte(`{"to":["Bob <bob@corp.example>"],"cc":{"x":"https://ok.example/a/../b"}}`), "see https://ok.example/a/", "")
	f.Add([]byte(`{"n":3,"url":"http://t.co/x"}`), "t.co/x", "url")
	f.Add([]byte(`{"to":"claims@mail.ups.com","cc":"x@ups.com.evil.example"}`), "claims@mail.ups.com", "")
	f.Fuzz(func(t *testing.T, raw []byte, output string, redacted string) {
		args, err := parseArgs(raw)
		if err != nil {
			return
		}
		s := NewState("s", "mail", Principal{Subject: "ana"}, []ToolDef{{Name: "send_email"}, {Name: "other"}, {Name: "stage"}})
		s.AddOutput(p, Source{Pos: 1, ToolRef: ToolRef{Tool: "get_message"}}, output)
		for _, tool := range []string{"send_email", "other", "stage"} {
			c := &Call{ToolRef: ToolRef{Tool: tool}, Args: args, Digest: ArgsDigest(args)}
			if pth, err := ParsePath(redacted); err == nil {
				c.Redacted = []Path{pth}
			}
			d1 := Decide(p, s, c, t0)
			d2 := Decide(p, s, c, t0)
			if d1.Verdict != d2.Verdict || d1.Reason != d2.Reason {
				t.Fatalf("not deterministic: %+v vs %+v", d1, d2)
			}
			switch d1.Verdict {
			case Allow, Deny, Ask:
			default:
				t.Fatalf("verdict %q", d1.Verdict)
			}
			if d1.Check == "" || d1.Reason == "" || d1.Check == CheckInternal {
				t.Fatalf("decision without check or reason: %+v", d1)
			}
		}
	})
}
