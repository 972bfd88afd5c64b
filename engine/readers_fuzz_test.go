package engine

import (
	"fmt"
	"strings"
	"testing"
)

// FuzzTrustedReaders: whenever bailiff trusts a value under a
// trusted_destinations entry, Go's readers (net/url as net/http dials,
// net/mail, mailto as RFC 6068) and the servers' path readings send it
// inside the entry. Node and Python are too slow to run per input; the
// differential test holds their answers for the corpus this starts from.
func FuzzTrustedReaders(f *testing.F) {
	for _, it := range readersCorpus() {
		f.Add(it.entry, it.value)
	}
	f.Fuzz(func(t *testing.T, entry, value string) {
		dp, err := compileDest(entry)
		if err != nil || strings.HasPrefix(Normalize(entry), listRef) {
			return
		}
		norm := Normalize(value)
		tg := targetOf(value, norm)
		if !dp.matches(&tg, norm, "") {
			return
		}
		if why := outsideCompiled(&dp, value, goReading(value)); why != "" {
			t.Fatalf("bailiff trusts %q under %q, but Go sends it elsewhere: %s", value, entry, why)
		}
	})
}

// outsideCompiled is outsideEntry for any compiled entry: the entry's
// canonical host, address or prefix, against the reader's.
func outsideCompiled(dp *destPattern, v string, r reading) string {
	switch dp.kind {
	case destDomain:
		return mailOutside("@"+dp.value, r.Mail)
	case destExact:
		if _, ok := singleEmail(dp.value); ok {
			return mailOutside(dp.value, r.Mail)
		}
		return "" // a channel id or a name: no reader gives it a place
	case destURLPrefix:
		p := dp.prefix
		e := fmt.Sprintf("%s://%s", p.scheme, p.host)
		if p.port != "" {
			e += ":" + p.port
		}
		return prefixOutside(e+p.path, r.URL)
	}
	in := func(h string) bool {
		h = readerHost(h)
		if dp.kind == destHostGlob {
			return matchGlob(dp.value, h)
		}
		return h == dp.value || strings.HasSuffix(h, "."+dp.value)
	}
	if strings.Contains(v, "://") {
		if r.URL != nil && (r.URL.User || !in(r.URL.Host)) {
			return fmt.Sprintf("host %q", r.URL.Host)
		}
		return ""
	}
	for _, a := range r.Mail {
		if i := strings.LastIndexByte(a, '@'); i < 0 || routed(a[:i]) || !in(a[i+1:]) {
			return fmt.Sprintf("recipient %q", a)
		}
	}
	return ""
}
