package engine

import (
	"net/url"
	"strings"
	"testing"
)

const domainPolicy = `
version: 1
rules:
  - {id: send, tool: send_email, action: allow}
  - {id: post, tool: http_post, action: allow}
tools:
  send_email:
    exfiltrating: true
    sink_params: [to]
    trusted_destinations: ["domain:ups.com", "domain:bbc.co.uk"]
  http_post:
    exfiltrating: true
    sink_params: [url]
    trusted_destinations: ["domain:ups.com", "domain:amazonaws.com", "domain:kawasaki.jp"]
`

// TestDomainPattern: domain:D trusts D and every name under it, read by
// labels as DNS reads them, and nothing a substring or a look-alike
// could pass off as it.
func TestDomainPattern(t *testing.T) {
	p := mustLoad(t, domainPolicy)
	cases := []struct {
		tool, arg, value string
		trusted          bool
	}{
		{"send_email", "to", "claims@ups.com", true},
		{"send_email", "to", "Claims Desk <claims@mail.UPS.com>", true},
		{"send_email", "to", "mailto:a@b.c.ups.com", true},
		{"send_email", "to", "news@bbc.co.uk", true},
		{"http_post", "url", "https://ups.com/claims", true},
		{"http_post", "url", "https://www.ups.com./claims", true},
		{"http_post", "url", "HTTPS://WWW.UPS.COM/x", true},
		{"send_email", "to", "claims@evil-ups.com", false},
		{"send_email", "to", "claims@ups.com.evil.example", false},
		{"send_email", "to", "claims@co.uk", false},
		{"send_email", "to", "claims@ups.com, x@evil.example", false},
		{"send_email", "to", "ups.com", false},
		{"http_post", "url", "https://evil.example/?u=ups.com", false},
		{"http_post", "url", "https://ups.com@evil.example/", false},
		{"http_post", "url", `https://www.ups.com\@evil.example/`, false},
		{"http_post", "url", "https://www.ups.com\uff0f@evil.example/", false},
		{"http_post", "url", "https://ups.c\u03bfm/", false}, // Greek omicron
		{"http_post", "url", "https://xups.com/", false},
		{"http_post", "url", "https://ups.com.evil.example/", false},
		{"http_post", "url", "https://amazonaws.com/", true},
		{"http_post", "url", "https://console.aws.amazonaws.com/", true},
		// Under a public suffix inside the domain: each is its own site.
		{"http_post", "url", "https://attacker-bucket.s3.amazonaws.com/", false},
		{"http_post", "url", "https://x.foo.kawasaki.jp/", false},
	}
	for _, c := range cases {
		d := decideOne(t, p, "", c.tool, c.arg, c.value)
		if got := d.Verdict == Allow; got != c.trusted || !got && d.Check != CheckTaint {
			t.Errorf("%s %s=%q: %s (%s), want trusted=%v", c.tool, c.arg, c.value, d.Verdict, d.Reason, c.trusted)
		}
	}
}

// TestDomainPatternLoadErrors: domain: takes only a registrable domain;
// a public suffix would trust every stranger's site under it.
func TestDomainPatternLoadErrors(t *testing.T) {
	for _, v := range []string{"domain:", "domain:co.uk", "domain:github.io", "domain:com", "domain:www.ups.com",
		"domain:1.2.3.4", "domain:*.ups.com", "domain:ups.com/claims", "domain:[::1]", "domain:a@ups.com",
		"domain:*.co.uk", "domain:*.com", "domain:ups_x.com"} {
		text := strings.Replace(domainPolicy, `"domain:bbc.co.uk"`, `"`+v+`"`, 1)
		_, err := Load("p.yaml", []byte(text))
		if err == nil || !strings.Contains(err.Error(), "registrable domain") {
			t.Errorf("%q: err = %v, want a registrable-domain error", v, err)
		}
	}
}

// FuzzDomainPattern: whatever domain:ups.com trusts, Go's own URL parser
// (as an HTTP client reads the value) and the address's domain agree is
// ups.com or a name under it.
func FuzzDomainPattern(f *testing.F) {
	dp, err := compileDest("domain:ups.com")
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{"https://www.ups.com/x", "claims@ups.com", "https://ups.com@evil.example/", "a@evil-ups.com", `https://ups.com\@evil.example`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		tg := targetOf(raw, Normalize(raw))
		if !dp.matches(&tg, Normalize(raw), "") {
			return
		}
		var host string
		if tg.url {
			u, err := url.Parse(raw)
			if err != nil {
				return // no Go client sends it at all
			}
			host = u.Hostname()
		} else if e, ok := singleEmail(Normalize(raw)); ok {
			host = emailDomain(e)
		} else {
			t.Fatalf("%q trusted but neither a URL nor an address", raw)
		}
		h, ok := canonicalHost(strings.TrimSuffix(host, "."), false)
		if !ok || h != "ups.com" && !strings.HasSuffix(h, ".ups.com") {
			t.Fatalf("%q trusted under domain:ups.com, but goes to %q", raw, host)
		}
	})
}
