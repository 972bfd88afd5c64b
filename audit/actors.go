package audit

import (
	"slices"
	"strings"

	"bailiff/engine"
)

// Actor is one principal the sessions in range acted for, as their
// session records name it: a subject verified by a token from Issuer is
// not the same actor as that name given with no token checked, and a
// subject holding other scopes in another session is another row, so a
// reviewer never reads one session's denial against another's scopes.
type Actor struct {
	Subject string
	// Authenticated is engine.AuthOIDC or engine.AuthNone, or empty in a
	// log older than identity and in a trace's recording.
	Authenticated string
	Issuer        string
	// Scopes are those its sessions held; Groups those presented.
	Scopes, Groups []string
	Sessions       int
	Calls, Denied  int
}

type actorKey struct{ subject, authenticated, issuer, scopes string }

// actorOf counts one more session for p, and is its Actor.
func (s *Summary) actorOf(p engine.Principal) *Actor {
	if s.Actors == nil {
		s.Actors = map[actorKey]*Actor{}
	}
	scopes := union(nil, p.Scopes)
	k := actorKey{p.Subject, p.Authenticated, p.Issuer, strings.Join(scopes, "\x00")}
	a := s.Actors[k]
	if a == nil {
		a = &Actor{Subject: p.Subject, Authenticated: p.Authenticated, Issuer: p.Issuer, Scopes: scopes}
		s.Actors[k] = a
	}
	a.Sessions++
	a.Groups = union(a.Groups, p.Groups)
	return a
}

func union(a, b []string) []string {
	out := append(slices.Clone(a), b...)
	slices.Sort(out)
	return slices.Compact(out)
}

// ActorList is the actors, those with the most calls first, then by
// subject and issuer.
func (s *Summary) ActorList() []*Actor {
	var out []*Actor
	for _, a := range s.Actors {
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b *Actor) int {
		switch {
		case a.Calls != b.Calls:
			return b.Calls - a.Calls
		case a.Subject != b.Subject:
			if a.Subject < b.Subject {
				return -1
			}
			return 1
		case a.Issuer != b.Issuer:
			if a.Issuer < b.Issuer {
				return -1
			}
			return 1
		case a.Authenticated != b.Authenticated:
			return strings.Compare(a.Authenticated, b.Authenticated)
		}
		return slices.Compare(a.Scopes, b.Scopes)
	})
	return out
}
