package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// Path addresses a value inside a call's arguments: keys joined by dots,
// list indexes in brackets, and keys that hold dots or brackets quoted:
// `to`, `message.recipients[0].email`, `headers["X-Api-Key"]`.
type Path struct {
	raw  string
	segs []seg
}

type seg struct {
	key string
	idx int // -1 for a key
}

// ParsePath parses the path syntax above.
func ParsePath(s string) (Path, error) {
	p, _, err := parsePath(s)
	return p, err
}

// parsePath is ParsePath, also telling which segments were quoted keys
// (written `["…"]`), whose text is never a glob.
func parsePath(s string) (Path, []bool, error) {
	p := Path{raw: s}
	var quoted []bool
	if s == "" {
		return p, nil, errors.New("empty argument path")
	}
	i := 0
	first := true
	for i < len(s) {
		switch {
		case s[i] == '[':
			j := strings.IndexByte(s[i:], ']')
			if j < 0 {
				return p, nil, fmt.Errorf("argument path %q: unclosed [", s)
			}
			inner := s[i+1 : i+j]
			if strings.HasPrefix(inner, `"`) {
				k, err := strconv.Unquote(inner)
				if err != nil || k == "" {
					return p, nil, fmt.Errorf("argument path %q: bad quoted key %s", s, inner)
				}
				p.segs = append(p.segs, seg{key: k, idx: -1})
				quoted = append(quoted, true)
			} else {
				n, err := strconv.Atoi(inner)
				if err != nil || n < 0 || strconv.Itoa(n) != inner {
					return p, nil, fmt.Errorf("argument path %q: [%s] is not a list index", s, inner)
				}
				p.segs = append(p.segs, seg{idx: n})
				quoted = append(quoted, false)
			}
			i += j + 1
		case s[i] == '.' && !first:
			i++
			fallthrough
		default:
			j := i
			for j < len(s) && s[j] != '.' && s[j] != '[' && s[j] != ']' {
				j++
			}
			if j == i {
				return p, nil, fmt.Errorf("argument path %q: empty key", s)
			}
			p.segs = append(p.segs, seg{key: s[i:j], idx: -1})
			quoted = append(quoted, false)
			i = j
		}
		first = false
		if i < len(s) && s[i] == ']' {
			return p, nil, fmt.Errorf("argument path %q: stray ]", s)
		}
	}
	return p, quoted, nil
}

func (p Path) String() string { return p.raw }

// lookup returns the value at p inside v.
func (p Path) lookup(v any) (any, bool) {
	for _, s := range p.segs {
		if s.idx < 0 {
			m, ok := v.(map[string]any)
			if !ok {
				return nil, false
			}
			if v, ok = m[s.key]; !ok {
				return nil, false
			}
		} else {
			l, ok := v.([]any)
			if !ok || s.idx >= len(l) {
				return nil, false
			}
			v = l[s.idx]
		}
	}
	return v, true
}

// overlap tells how a redacted path r relates to p: covers means p lies at
// or under r (its value is unknown); inside means r lies strictly under p
// (p exists, but part of its value is unknown).
func overlap(r, p Path) (covers, inside bool) {
	n := min(len(r.segs), len(p.segs))
	for i := 0; i < n; i++ {
		if r.segs[i] != p.segs[i] {
			return false, false
		}
	}
	if len(r.segs) <= len(p.segs) {
		return true, false
	}
	return false, true
}

// tri is three-valued truth for evaluation over redacted inputs.
type tri uint8

const (
	no tri = iota
	yes
	unknown
)

type predKind uint8

const (
	pEquals predKind = iota
	pIn
	pRegex
	pPrefix
	pGlob
	pExists
	pGt
	pGte
	pLt
	pLte
)

type pred struct {
	path Path
	kind predKind
	val  any   // equals
	vals []any // in
	str  string
	re   *regexp.Regexp
	num  float64
	flag bool
}

func compilePred(ps Predicate) (pred, error) {
	pr := pred{}
	pth, err := ParsePath(ps.Arg)
	if err != nil {
		return pr, fmt.Errorf("when: %w", err)
	}
	pr.path = pth
	n := 0
	set := func(k predKind) { pr.kind = k; n++ }
	if ps.Equals != nil {
		set(pEquals)
		pr.val = ps.Equals.V
	}
	if ps.In != nil {
		if len(ps.In) == 0 {
			// Nothing is in an empty list, and its canonical form,
			// which omits it, would be a predicate with no operator.
			return pr, fmt.Errorf("predicate on %q: in lists no values, so it could never hold", ps.Arg)
		}
		set(pIn)
		for _, s := range ps.In {
			// The canonical form cannot carry a null in a list, so the
			// policy a log embeds would decide differently from this one.
			if s.V == nil {
				return pr, fmt.Errorf("predicate on %q: in holds a null (~), which is no comparison value; test a missing argument with exists: false", ps.Arg)
			}
			pr.vals = append(pr.vals, s.V)
		}
	}
	if ps.Regex != nil {
		set(pRegex)
		re, err := anchored(*ps.Regex)
		if err != nil {
			return pr, fmt.Errorf("bad regex %q: %v", *ps.Regex, err)
		}
		pr.re = re
	}
	if ps.Prefix != nil {
		set(pPrefix)
		pr.str = *ps.Prefix
	}
	if ps.Glob != nil {
		set(pGlob)
		pr.str = *ps.Glob
		if err := checkGlob(pr.str); err != nil {
			return pr, err
		}
	}
	if ps.Exists != nil {
		set(pExists)
		pr.flag = *ps.Exists
	}
	for _, c := range []struct {
		v *float64
		k predKind
	}{{ps.Gt, pGt}, {ps.Gte, pGte}, {ps.Lt, pLt}, {ps.Lte, pLte}} {
		if c.v != nil {
			set(c.k)
			// NaN compares false with everything and an infinity leaves no
			// number on one side, so such a bound would read as a limit it is
			// not; JSON cannot carry either into the canonical form.
			if math.IsNaN(*c.v) || math.IsInf(*c.v, 0) {
				return pr, fmt.Errorf("predicate on %q compares with %v: a bound must be a finite number", ps.Arg, *c.v)
			}
			if *c.v == 0 {
				// -0 is written "-0" and read back as 0: one policy, two
				// canonical forms.
				*c.v = 0
			}
			pr.num = *c.v
		}
	}
	if n != 1 {
		return pr, fmt.Errorf("predicate on %q needs exactly one of equals, in, regex, prefix, glob, exists, gt, gte, lt, lte (has %d)", ps.Arg, n)
	}
	return pr, nil
}

// eval tests the predicate. A list is judged in the direction that fails
// closed: for an allow rule every element must satisfy a value operator,
// for a deny or ask rule one element is enough.
func (pr *pred) eval(c *Call, all bool) tri {
	for _, r := range c.Redacted {
		covers, inside := overlap(r, pr.path)
		if covers && pr.kind == pExists && len(r.segs) == len(pr.path.segs) {
			return boolTri(pr.flag)
		}
		if inside && pr.kind == pExists {
			return boolTri(pr.flag)
		}
		if covers || inside {
			return unknown
		}
	}
	v, ok := pr.path.lookup(c.Args)
	if pr.kind == pExists {
		return boolTri(ok == pr.flag)
	}
	if !ok {
		return no
	}
	if l, isList := v.([]any); isList && pr.kind != pEquals {
		if len(l) == 0 {
			return no
		}
		for _, e := range l {
			m := pr.test(e)
			if all && !m {
				return no
			}
			if !all && m {
				return yes
			}
		}
		return boolTri(all)
	}
	return boolTri(pr.test(v))
}

func boolTri(b bool) tri {
	if b {
		return yes
	}
	return no
}

func (pr *pred) test(v any) bool {
	switch pr.kind {
	case pEquals:
		return scalarEqual(pr.val, v)
	case pIn:
		for _, w := range pr.vals {
			if scalarEqual(w, v) {
				return true
			}
		}
		return false
	case pRegex:
		s, ok := v.(string)
		return ok && pr.re.MatchString(s)
	case pPrefix:
		s, ok := v.(string)
		return ok && strings.HasPrefix(s, pr.str)
	case pGlob:
		s, ok := v.(string)
		return ok && matchGlob(pr.str, s)
	case pGt, pGte, pLt, pLte:
		f, ok := number(v)
		if !ok {
			return false
		}
		switch pr.kind {
		case pGt:
			return f > pr.num
		case pGte:
			return f >= pr.num
		case pLt:
			return f < pr.num
		default:
			return f <= pr.num
		}
	}
	return false
}

func number(v any) (float64, bool) {
	switch v := v.(type) {
	case json.Number:
		f, err := v.Float64()
		return f, err == nil
	case float64:
		return v, true
	}
	return 0, false
}

// scalarEqual compares a policy scalar with an argument value. Numbers
// compare by value (1 equals 1.0); nothing else converts.
func scalarEqual(want, got any) bool {
	switch w := want.(type) {
	case nil:
		return got == nil
	case string:
		g, ok := got.(string)
		return ok && g == w
	case bool:
		g, ok := got.(bool)
		return ok && g == w
	case float64:
		g, ok := number(got)
		return ok && g == w
	}
	return false
}

// anchored compiles a policy's pattern to match a whole value. A pattern
// that does not compile is reported as written: the anchoring wrapped
// around it would otherwise show in the error (`a-)` for "[a-").
func anchored(src string) (*regexp.Regexp, error) {
	if _, err := regexp.Compile(src); err != nil {
		return nil, err
	}
	return regexp.Compile(`^(?:` + src + `)$`)
}
