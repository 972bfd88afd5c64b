package engine

import (
	"fmt"
	"strings"
	"unicode"
)

// A destination that is a phrase ("original payment method", "registered
// device holder") names no place by itself: the tool maps it to one the
// user set up. Tainted, it is asked rather than denied by on_taint alone,
// since the same words on a merchant's page and in the agent's call are
// the common, legitimate case; untainted and untrusted, it is asked as any
// destination is. A phrase is two words or more (and so is each item of a
// comma list), and nothing in it could
// carry data somewhere on its own (docs/policy.md lists the classes):
//   - no URL or scheme (':'), path ('/', '\'), address or handle ('@'),
//     channel ('#'), or any character but letters, marks, digits, white
//     space and . , ' - (a bracket or '&' can join a list of names);
//   - no host or address that tokens finds ("evil.example");
//   - fewer than four digits in all (a phone number, an account, a form
//     number has more);
//   - no identifier: a word of six or more characters with both letters
//     and digits ("C0GENERAL", "acct9x").
//
// A single word stays a destination: it can be a name in the tool's own
// namespace (a channel "payments-external", a user, a repository).

// isPhrase tells whether destination n (normalized) is a phrase.
func isPhrase(n string) bool {
	n = strings.TrimSpace(n)
	if n == "" || !strings.ContainsFunc(n, unicode.IsSpace) || strings.ContainsAny(n, ":/\\@#") {
		return false
	}
	// A comma list is a list of destinations to a tool that splits it:
	// each item must be a phrase of its own words.
	for _, part := range strings.Split(n, ",") {
		if p := strings.TrimSpace(part); p != "" && !strings.ContainsFunc(p, unicode.IsSpace) {
			return false
		}
	}
	digits, letters := 0, 0
	wordLen, wordLetters, wordDigits := 0, false, false
	endWord := func() bool {
		ident := wordLen >= 6 && wordLetters && wordDigits
		wordLen, wordLetters, wordDigits = 0, false, false
		return ident
	}
	for _, r := range n {
		switch {
		case unicode.IsLetter(r) || unicode.IsMark(r):
			letters++
			wordLen++
			wordLetters = true
		case unicode.IsDigit(r):
			digits++
			wordLen++
			wordDigits = true
		case unicode.IsSpace(r) || strings.ContainsRune(".,'-", r):
			if endWord() {
				return false
			}
		default:
			return false
		}
	}
	if endWord() || digits >= 4 || letters == 0 {
		return false
	}
	found := false
	tokens(n, func(e, h string) { found = found || e != "" || h != "" })
	return !found
}

// phraseDecision is the ask for tainted destination d when it is a phrase
// as sent and normalized, nil when it is not.
func phraseDecision(d *dest, src Source, why string) *Decision {
	if !isPhrase(d.norm) || !isPhrase(Normalize(d.raw)) || listSpaced(d.raw) {
		return nil
	}
	by := src
	return &Decision{Verdict: Ask, Check: CheckTaint, TaintedBy: &by, Destination: d.norm,
		Reason: fmt.Sprintf("destination %s %q %s in untrusted %s, but it is a phrase that names no place by itself: a human must confirm", d.path, d.raw, why, src)}
}

// listSpaced tells whether raw, as sent, holds white space other than
// the plain space: a newline, a tab, a no-break or ideographic space.
// Normalizing makes each a space, but a tool may split a list on them.
func listSpaced(raw string) bool {
	return strings.ContainsFunc(raw, func(r rune) bool { return r != ' ' && unicode.IsSpace(r) })
}
