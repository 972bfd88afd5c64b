package engine

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// checkGlob rejects patterns the matcher would treat surprisingly.
func checkGlob(g string) error {
	if !utf8.ValidString(g) {
		// A byte that is no character would be compared against part of
		// one.
		return fmt.Errorf("glob %q is not valid UTF-8", g)
	}
	if strings.Contains(g, "***") {
		return fmt.Errorf("glob %q: use * or **", g)
	}
	if strings.Count(g, "*") > 16 {
		return fmt.Errorf("glob %q: too many *", g)
	}
	return nil
}

// glob is a compiled glob over names (of tools and servers), where '/'
// is an ordinary character: MCP tool names may hold it
// ("user-profile/update"), and a deny rule "delete_*" must not miss
// "delete_all/force" that an allow "**" would catch. The common shapes
// (a literal, "*", "prefix*") are matched without the general matcher.
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
		return true
	case globPrefix:
		return strings.HasPrefix(s, g.pat)
	}
	return matchName(g.pat, s)
}

// matchGlob matches s against a glob where * is any run of characters
// except '/', ** is any run at all, and ? is one character except '/'.
// Tool and server names hold no '/', so for them * matches everything.
func matchGlob(g, s string) bool {
	if strings.Contains(g, "**") {
		// Mixed * and ** need more than backtracking: a ** passed earlier
		// may have to take a '/' the last * cannot.
		return matchTokens(globTokens(g), s)
	}
	return backtrack(g, s, false)
}

// backtrack matches a glob whose stars are all alike: with names, '/' is
// an ordinary character (a run of stars is any run, ? any character);
// without, the glob holds no ** and neither a star nor ? takes a '/'.
// Backtracking to the last star is then enough, and allocates nothing.
func backtrack(g, s string, names bool) bool {
	starG, starS := -1, -1
	gi, si := 0, 0
	for si < len(s) {
		if gi < len(g) {
			switch g[gi] {
			case '*':
				for gi < len(g) && g[gi] == '*' {
					gi++
				}
				starG, starS = gi, si
				continue
			case '?':
				if names || s[si] != '/' {
					gi++
					si += charLen(s, si)
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
		if starG >= 0 && (names || s[starS] != '/') {
			// On by a whole character, so that a ? after the star never
			// matches the middle of one.
			starS += charLen(s, starS)
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

const (
	globGeneral globKind = iota
	globLiteral
	globStar   // "*": any name
	globPrefix // "lit*": pat holds lit
)

// globToken is one element of a glob: a character, ? (any one but '/'),
// * (any run without '/') or ** (any run).
type globToken struct {
	r    rune
	kind uint8
}

const (
	tokRune uint8 = iota
	tokOne
	tokStar
	tokStars
)

func globTokens(g string) []globToken {
	var out []globToken
	for i := 0; i < len(g); {
		switch {
		case strings.HasPrefix(g[i:], "**"):
			out = append(out, globToken{kind: tokStars})
			i += 2
		case g[i] == '*':
			out = append(out, globToken{kind: tokStar})
			i++
		case g[i] == '?':
			out = append(out, globToken{kind: tokOne})
			i++
		default:
			out = append(out, globToken{r: charAt(g, i), kind: tokRune})
			i += charLen(g, i)
		}
	}
	return out
}

// matchTokens runs the glob as an automaton over s, one character at a
// time: every position the pattern could be at is kept, so no choice of
// which star takes what is ever missed.
func matchTokens(toks []globToken, s string) bool { return runTokens(toks, s, false) }

// runTokens is matchTokens; with names, '/' is an ordinary character.
func runTokens(toks []globToken, s string, names bool) bool {
	cur, next := make([]bool, len(toks)+1), make([]bool, len(toks)+1)
	skip := func(set []bool) {
		for i := 0; i < len(toks); i++ {
			if set[i] && (toks[i].kind == tokStar || toks[i].kind == tokStars) {
				set[i+1] = true
			}
		}
	}
	cur[0] = true
	skip(cur)
	for i := 0; i < len(s); {
		r := charAt(s, i)
		i += charLen(s, i)
		clear(next)
		moved := false
		for k, on := range cur[:len(toks)] {
			if !on {
				continue
			}
			switch t := toks[k]; t.kind {
			case tokRune:
				if r == t.r {
					next[k+1], moved = true, true
				}
			case tokOne:
				if r != '/' || names {
					next[k+1], moved = true, true
				}
			case tokStar:
				if r != '/' || names {
					next[k], moved = true, true
				}
			case tokStars:
				next[k], moved = true, true
			}
		}
		if !moved {
			return false
		}
		skip(next)
		cur, next = next, cur
	}
	return cur[len(toks)]
}

// charAt is the character at s[i], or for a byte that starts no valid
// UTF-8 sequence a value of its own (never U+FFFD), so that such a byte
// matches only itself, as a byte-wise comparison has it.
func charAt(s string, i int) rune {
	r, n := utf8.DecodeRuneInString(s[i:])
	if r == utf8.RuneError && n == 1 {
		return -1 - rune(s[i])
	}
	return r
}

func charLen(s string, i int) int {
	_, n := utf8.DecodeRuneInString(s[i:])
	return n
}

// matchName matches a name against a glob where '/' is an ordinary
// character: * and ** are any run, ? any one character.
func matchName(g, s string) bool { return backtrack(g, s, true) }
