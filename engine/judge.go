package engine

import "fmt"

// judgeDest classifies destination d: unknown (redacted) ones by the
// oracle, and known ones by judge, where output whose text is gone may
// have held them.
func judgeDest(s *State, ct *contract, d *dest, o *oracle) (destOutcome, Source, string) {
	if d.unknown {
		return destOutcome(o.choose(3, d.path, CheckTaint)), Source{}, ""
	}
	out, src, why := judge(s, ct, d.raw, d.norm)
	if out != destMiss || runeCount(d.norm) < minTaintLen {
		return out, src, why
	}
	if gone := s.unknownOutputs(); len(gone) > 0 {
		// The destination may have been in output whose text is gone.
		src = gone[0]
		if o.choose(2, purgedLabel+src.String(), CheckTaint) == 1 {
			out, why = destTainted, "may have appeared"
		}
	}
	return out, src, why
}

// judge classifies one destination, given as the agent sent it (raw) and
// normalized (d).
func judge(s *State, ct *contract, raw, d string) (destOutcome, Source, string) {
	t := targetOf(raw, d)
	if trustedBy(ct, &t, d, s.self) || t.ok && s.approved[d] {
		return destOK, Source{}, ""
	}
	ix := s.index()
	long := runeCount(d) >= minTaintLen
	email, isEmail := singleEmail(d)
	// An exact email, or a URL whose host is long enough to index, is
	// looked up in the index first: a hit there is the common case. A
	// miss still scans, since the string can have appeared inside a
	// longer token ("xbob@evil.example") that the index keys otherwise.
	early := isEmail && email == d
	if t.webN.host != "" && runeCount(t.webN.host) >= minTaintLen {
		early = true
	}
	if long && !early {
		if src, ok := ix.find(d); ok {
			return destTainted, src, "appeared"
		}
	}
	if src, what, ok := held(ix, &t, d); ok {
		return destTainted, src, what
	}
	if long && early {
		if src, ok := ix.find(d); ok {
			return destTainted, src, "appeared"
		}
	}
	return destMiss, Source{}, untrustedWhy(ct, &t, d, s.self)
}

// held looks up in ix every address and host destination d (t read from
// it) holds, in each form a reader finds them, and reports the output that
// first held one.
func held(ix *taintIndex, t *target, d string) (Source, string, bool) {
	type hit struct {
		src  int32
		what string
	}
	var found *hit
	look := func(e, h string) {
		if found != nil {
			return
		}
		if e != "" && runeCount(e) >= minTaintLen {
			if i, ok := ix.emails[e]; ok {
				what := fmt.Sprintf("holds address %q, which appeared", e)
				if e == d {
					what = "appeared"
				}
				found = &hit{i.src, what}
				return
			}
		}
		if h != "" && runeCount(h) >= minTaintLen {
			if i, ok := ix.hosts[h]; ok {
				found = &hit{i.src, fmt.Sprintf("holds host %q, which appeared", h)}
			}
		}
	}
	tokens(d, look)
	// Each recipient a mail reader finds, and the text as a server or a
	// mail client decodes it ("mailto:a%40evil.example"), is looked up on
	// its own.
	for i, e := range t.emails {
		look(e, t.hosts[i])
	}
	if found == nil {
		decodedForms(d, func(x string) bool {
			tokens(x, look)
			return found == nil
		})
	}
	// The host a client would connect to, however it is written
	// (escapes, IPv4 in hex), is looked up as well.
	for _, h := range []string{t.web.host, t.webN.host, unmapped(t.web.host)} {
		if found == nil && h != "" && runeCount(h) >= minTaintLen {
			if i, ok := ix.hosts[h]; ok {
				found = &hit{i.src, fmt.Sprintf("goes to host %q, which appeared", h)}
			}
		}
	}
	if found == nil {
		return Source{}, "", false
	}
	return ix.sources[found.src], found.what, true
}
