package engine

import (
	"fmt"
	"strings"

	"golang.org/x/net/publicsuffix"
)

// Origin-aware taint. An output fetched from a URL has that URL's
// registrable domain as its origin; a destination is self-published when
// the outputs that taint it all come from its own registrable domain,
// such as the page at flysanjose.com naming
// "https://www.flysanjose.com/report-lost". Such a destination gets the
// contract's on_self_published verdict instead of on_taint's.

func compileOrigin(c *contract, name string, cs *Contract) *compileErr {
	if cs.Fetches != "" {
		pth, err := ParsePath(cs.Fetches)
		if err != nil {
			return fail(err.Error(), "tools", name, "fetches")
		}
		c.fetches = &pth
	}
	// The tiers run from third-party (on_taint) through first-party to
	// self-published, and each unset verdict is the stricter tier's.
	var ce *compileErr
	if c.onFirst, ce = tierVerdict(name, "on_first_party", cs.OnFirstParty, c.onTaint); ce != nil {
		return ce
	}
	if c.onSelf, ce = tierVerdict(name, "on_self_published", cs.OnSelfPublished, c.onFirst); ce != nil {
		return ce
	}
	// A weaker tier denied while a stronger one is asked would rank the
	// safer case as the worse one.
	switch {
	case c.onFirst == Deny && c.onTaint == Ask:
		return fail(fmt.Sprintf("tool %q: on_first_party: deny is stricter than on_taint: ask, which would ask for a destination a third party planted and deny the one the user's own records hold", name), "tools", name, "on_first_party")
	case c.onSelf == Deny && c.onTaint == Ask:
		return fail(fmt.Sprintf("tool %q: on_self_published: deny is stricter than on_taint: ask, which would ask for a destination a third party planted and deny the one its own site published", name), "tools", name, "on_self_published")
	case c.onSelf == Deny && c.onFirst == Ask:
		return fail(fmt.Sprintf("tool %q: on_self_published: deny is stricter than on_first_party: ask, which would ask for a destination in the user's own records and deny the one a site published itself", name), "tools", name, "on_self_published")
	}
	c.lists = cs.Lists
	return nil
}

// tierVerdict reads a tier's verdict key: deny or ask, or the stronger
// tier's verdict when unset.
func tierVerdict(tool, key, v string, unset Verdict) (Verdict, *compileErr) {
	switch v {
	case "":
		return unset, nil
	case "deny":
		return Deny, nil
	case "ask":
		return Ask, nil
	}
	return "", fail(fmt.Sprintf("tool %q: %s must be deny or ask, not %q", tool, key, v), "tools", tool, key)
}

// OriginOf is the origin of the output call c brings back: the
// registrable domain of the URL its contract's fetches argument holds,
// read as the client connects to it, or "" when that is not known (no
// fetches, the argument redacted or missing, not one unambiguous web URL,
// an IP address).
func (p *Policy) OriginOf(server string, c *Call) string {
	if c == nil {
		return ""
	}
	ref := c.ToolRef
	if ref.Server == "" {
		ref.Server = server
	}
	ct := p.contractFor(ref)
	if ct.fetches == nil {
		return ""
	}
	v, present, unk := valueAt(c, *ct.fetches)
	raw, ok := v.(string)
	if !present || unk || !ok || carriesURL(raw) {
		// A URL carrying another may be a redirect a fetch follows: the
		// page it returns is not known to be the first site's.
		return ""
	}
	t := targetOf(raw, Normalize(raw))
	if !t.ok || !t.url {
		return ""
	}
	return registrable(t.host)
}

// registrable is the registrable domain (eTLD+1, private suffixes such as
// github.io included) of canonical host h, or "" for an IP address or a
// name that has none (a public suffix, a single label).
func registrable(h string) string {
	h = strings.TrimSuffix(h, ".") // DNS reads "a.com." as "a.com"
	if h == "" || strings.HasPrefix(h, "[") || ipv4(h) || strings.Contains(h, "..") {
		return ""
	}
	d, err := publicsuffix.EffectiveTLDPlusOne(h)
	if err != nil {
		return ""
	}
	return d
}

// carriesURL tells whether URL s holds another URL after its authority,
// escaped or not: a redirect target ("?to=https://evil.example/",
// "?next=%2F%2Fevil.example"), to which the site would pass the data on,
// so that publishing it says nothing of where the data ends up.
func carriesURL(s string) bool {
	i := strings.Index(s, "://")
	if i < 0 {
		return false
	}
	if strings.IndexByte(s, ':') != i {
		// "https:/host/?to=https://evil" is read by clients as a URL of
		// host; the first "://" is the one it carries.
		return true
	}
	rest := s[i+3:]
	for range 4 {
		// A scheme-relative target ("http:evil.example"), or one a
		// client reads past a tab or newline ("/\t/evil.example").
		low := strings.ToLower(rest)
		for _, sch := range []string{"http:", "https:", "ws:", "wss:", "ftp:"} {
			if strings.Contains(low, sch) {
				return true
			}
		}
		if strings.ContainsAny(rest, "\t\n\r") {
			return true
		}
		for _, sep := range []string{"//", `\\`, `/\`, `\/`} {
			if strings.Contains(rest, sep) {
				return true
			}
		}
		if !strings.Contains(rest, "%") {
			return false
		}
		d, ok := percentDecode(rest)
		if !ok {
			return true // an escape no client reads alike
		}
		rest = d
	}
	return true
}

// Source is where a piece of tool output came from: its position in the
// session (trace line or record seq, as the caller numbers it), the server
// and the tool. Taint decisions name the Source that tainted them.
type Source struct {
	Pos int `json:"pos"`
	ToolRef
	// Origin is the registrable domain of the URL the output was fetched
	// from (Policy.OriginOf), "" when it is not known: search results,
	// mail, documents, and any tool whose contract declares no fetches.
	Origin string `json:"origin,omitempty"`
}

func (s Source) String() string {
	if s.Origin != "" {
		return fmt.Sprintf("output of %s from %s (event %d)", s.Tool, s.Origin, s.Pos)
	}
	return fmt.Sprintf("output of %s (event %d)", s.Tool, s.Pos)
}
