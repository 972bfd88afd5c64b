package report

import (
	"fmt"

	"bailiff/audit"
	"bailiff/engine"
)

// maxActors is how many principals the pack names one by one.
const maxActors = 20

// mdActors writes who the sessions acted for: a reviewer asks whose
// authority each call used, and whether anything checked it.
func (p *Pack) mdActors(b *mdWriter) {
	actors := p.ActorList()
	if len(actors) == 0 {
		return
	}
	b.w("### Who acted\n\n")
	var rows [][]string
	for i, a := range actors {
		if i == maxActors {
			break
		}
		rows = append(rows, []string{a.Subject, checkedBy(a), fmt.Sprint(a.Sessions), fmt.Sprint(a.Calls), fmt.Sprint(a.Denied), orNone(a.Scopes)})
	}
	b.table([]string{"PRINCIPAL", "ESTABLISHED BY", "SESSIONS", "CALLS", "DENIED", "SCOPES"}, rows)
	if len(actors) > maxActors {
		b.w("And %s more, with fewer calls.\n\n", counted(len(actors)-maxActors, "principal"))
	}
	if len(actors) > 1 {
		b.w("%s lists one principal's calls, session by session.\n\n", p.callsCommand("--principal NAME"))
	}
	var unchecked int
	for _, a := range actors {
		if a.Authenticated != engine.AuthOIDC {
			unchecked += a.Sessions
		}
	}
	if unchecked > 0 {
		b.w("%s of %d checked no token: there the principal is the name the gateway was given, and its scopes those it was configured with.\n\n",
			counted(unchecked, "session"), p.Sessions)
	}
}

func checkedBy(a *audit.Actor) string {
	switch a.Authenticated {
	case engine.AuthOIDC:
		return "token from " + a.Issuer
	case engine.AuthNone:
		return "no token checked"
	}
	return "no token checked (not recorded)"
}
