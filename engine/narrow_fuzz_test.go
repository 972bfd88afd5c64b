package engine

import (
	"strings"
	"testing"
)

// FuzzNotPath: any not_destinations entry and any argument path are
// judged without a panic; an entry with no glob judges as the plain
// at-or-under rule does; and "**." before an entry only widens it.
func FuzzNotPath(f *testing.F) {
	for _, s := range [][2]string{
		{"data.**", "data.contact.email"}, {"**.contact_*", "rows[2].contact_email"}, {"a.?b*", "a.xbc"},
		{`a["*"].b`, `a["*"].b`}, {"rows.channel", "rows[3][1].channel"}, {"a.**.**.b", "a.b"}, {"x[0]", "x[0].y"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, entry, at string) {
		n, err := parseNotPath(entry)
		if err != nil {
			return
		}
		p, err := ParsePath(at)
		if err != nil || len(p.segs) > 64 {
			return
		}
		got := excludes(n, p.segs)
		plain := true
		for _, s := range n.segs {
			plain = plain && !s.glob && !s.any
		}
		if plain && got != plainExcludes(n, p.segs) {
			t.Fatalf("excludes(%q, %q) = %v, the plain rule says otherwise", entry, at, got)
		}
		if wide, err := parseNotPath("**." + entry); err == nil && !strings.HasPrefix(entry, "[") && got && !excludes(wide, p.segs) {
			t.Fatalf("%q excludes %q but **.%s does not", entry, at, entry)
		}
	})
}

// plainExcludes is the rule for entries without globs, as it stood
// before globs: keys skip the list indexes before them.
func plainExcludes(n notPath, segs []seg) bool {
	i := 0
	for _, s := range n.segs {
		for s.idx < 0 && i < len(segs) && segs[i].idx >= 0 {
			i++
		}
		if i == len(segs) || segs[i] != s.seg {
			return false
		}
		i++
	}
	return true
}
