package engine

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// checkGlob rejects patterns the matcher would treat surprisingly.
func checkGlob(g string) error {
	if strings.Contains(g, "***") {
		return fmt.Errorf("glob %q: use * or **", g)
	}
	if strings.Count(g, "*") > 16 {
		return fmt.Errorf("glob %q: too many *", g)
	}
	return nil
}

// glob is a compiled glob: the common shapes (a literal, "*", "prefix*")
// are matched without the general matcher.
type glob struct {
	pat  string
	kind globKind
}

type globKind uint8

func compileGlob(g string) glob {
	switch i := strings.IndexAny(g, "*?"); {
	case i < 0:
		return glob{g, globLiteral}
	case g == "*":
		return glob{g, globStar}
	case i == len(g)-1 && g[i] == '*':
		return glob{g[:i], globPrefix}
	}
	return glob{g, globGeneral}
}

func (g glob) match(s string) bool {
	switch g.kind {
	case globLiteral:
		return s == g.pat
	case globStar:
		return strings.IndexByte(s, '/') < 0
	case globPrefix:
		return strings.HasPrefix(s, g.pat) && strings.IndexByte(s[len(g.pat):], '/') < 0
	}
	return matchGlob(g.pat, s)
}

// matchGlob matches s against a glob where * is any run of characters
// except '/', ** is any run at all, and ? is one character except '/'.
// Tool and server names hold no '/', so for them * matches everything.
func matchGlob(g, s string) bool {
	// Backtracking over the last star is enough for patterns of this size,
	// and allocates nothing.
	starG, starS := -1, -1
	double := false
	gi, si := 0, 0
	for si < len(s) {
		if gi < len(g) {
			switch g[gi] {
			case '*':
				double = gi+1 < len(g) && g[gi+1] == '*'
				if double {
					gi += 2
				} else {
					gi++
				}
				starG, starS = gi, si
				continue
			case '?':
				r, n := utf8.DecodeRuneInString(s[si:])
				if r != '/' {
					gi++
					si += n
					continue
				}
			default:
				if g[gi] == s[si] {
					gi++
					si++
					continue
				}
			}
		}
		if starG >= 0 && (double || s[starS] != '/') {
			starS++
			si = starS
			gi = starG
			continue
		}
		return false
	}
	for gi < len(g) && g[gi] == '*' {
		gi++
	}
	return gi == len(g)
}

// MatchGlob tells whether s matches a rule's server or tool glob: *
// within a path segment, ** across, ? one character.
func MatchGlob(g, s string) bool { return matchGlob(g, s) }

const (
	globGeneral globKind = iota
	globLiteral
	globStar   // "*": anything without '/'
	globPrefix // "lit*": pat holds lit
)
