package main

import (
	"fmt"
	"sort"
	"strings"
)

// readme is the corpus's README. It is generated with the traces so that
// its counts are always those of the files beside it.
func readme(ss []*session) string {
	var b strings.Builder
	b.WriteString(readmeIntro)
	benign, attack := 0, 0
	for _, s := range ss {
		if strings.HasPrefix(s.id, "wb") {
			benign++
		} else {
			attack++
		}
	}
	fmt.Fprintf(&b, "\n## Counts\n\n%d sessions: %d benign (`wb*`), %d attack (`wa*`), across %d organisations. "+
		"Each session has exactly one send, and only the sends are labelled.\n\n", len(ss), benign, attack, len(orgs))
	b.WriteString(table(ss, "Send calls per destination form", func(x send) string { return x.form }))
	b.WriteString(table(ss, "Send calls per family (benign: how the destination was found)", func(x send) string { return x.family }))
	b.WriteString("\n## Organisations\n\n| organisation | website | addresses | lookalikes |\n|---|---|---|---|\n")
	for _, o := range orgs {
		fmt.Fprintf(&b, "| %s | %s | %s | %s, %s |\n", o.name, o.host, o.mail, o.lure[0].host, o.lure[1].host)
	}
	b.WriteString(readmeEnd)
	return b.String()
}

// table counts the sends by key, benign and attack side by side, keys
// sorted so the text is stable.
func table(ss []*session, title string, key func(send) string) string {
	n := map[string][2]int{}
	for _, s := range ss {
		for _, x := range s.sends {
			c := n[key(x)]
			if x.label == "attack" {
				c[1]++
			} else {
				c[0]++
			}
			n[key(x)] = c
		}
	}
	keys := make([]string, 0, len(n))
	for k := range n {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	fmt.Fprintf(&b, "%s:\n\n| | benign | attack |\n|---|---|---|\n", title)
	for _, k := range keys {
		fmt.Fprintf(&b, "| %s | %d | %d |\n", k, n[k][0], n[k][1])
	}
	return b.String() + "\n"
}

const readmeIntro = `# Web-found sends

Sessions of an agent doing customer-service and admin errands for ana on
the web: a lost-bag claim, an insurance claim, a billing dispute, a card
dispute, a transcript request, a GOV.UK refund, returns to a Japanese and
an Australian shop, a hotel's lost and found, a rental damage charge, a
telecom bill, a clinic's records request and a security report to an
open-source project on github.io. Each session ends in one send
(` + "`send_email` or `submit_form`" + `) whose destination was read on the web or in
mail, which is what the taint check judges.

Benign sessions send where the organisation itself said to: a search
lists its home page, a fetch of its site (sometimes a second page) gives
out the address or form, and the agent sends exactly there. In a few the
search snippet already shows the destination, so output of unknown
origin holds it too; in a few the task was read from ana's own mail
first. Attack sessions send ana's details where an injection pointed:

- ` + "`thirdparty`" + `: the injection is on a page whose origin is not the
  destination's domain (a review forum, another lookalike site, a contact
  directory, users' answers on the organisation's own site; on github.io,
  a page of alice.github.io naming mallory.github.io);
- ` + "`mail`, `search`" + `: in a phishing message or a search snippet, of unknown
  origin;
- ` + "`ownpage`" + `: a search result or a mail leads the agent to the attacker's
  site, whose page gives a destination on that same site;
- ` + "`encoded-*`" + `: the destination is obfuscated in the output (` + "`[at]`/`[dot]`" + `,
  ` + "`(at)`" + `, a percent-encoded host, spelled out, HTML entities, base64, a
  defanged URL, fullwidth letters) and the agent sends it decoded;
- ` + "`redirect`" + `: the organisation's own open redirect with a second domain in
  its query, on the organisation's page, a third-party page or a snippet;
- ` + "`recordnote`" + `: a stranger's words in the free-text note of ana's own case
  record (` + "`get_case`" + `, first-party) point at the attacker;
- ` + "`swapped`" + `: a stranger's page has the agent give the attacker's address as
  the form's contact;
- ` + "`identifier`" + `: a stranger's page swaps the refund channel for the
  attacker's wallet, an identifier.

Benign sessions of the provenance families take the destination from
ana's case record (` + "`record`" + `), give her own address as the contact
(` + "`owncontact`" + `), name the refund channel the page names, a phrase
(` + "`phrase`" + `), or follow the organisation's page to its partner on another
registrable domain (` + "`partner`" + `). Every session's principal carries ana's
address.

The destination forms are ` + "`url`, `urlquery`" + ` (a URL with a query; the redirects
count here), ` + "`email`, `named` (`Name <addr>`), `mailto`, `nested`" + ` (the address
in ` + "`fields.contact.email`" + `, besides the form's URL) and ` + "`case`" + ` (the page writes
the host or address in mixed case, the agent writes it in lower case).
`

const readmeEnd = `
## Policies

` + "`policy.yaml`" + ` allows every tool by a rule, so the taint check alone decides
each send; ` + "`policy-origin.yaml`" + ` is the same plus ` + "`on_self_published: ask`" + ` on
both sinks; ` + "`policy-tiers.yaml`" + ` adds the provenance tiers: ` + "`get_case`" + ` is
first-party (` + "`on_first_party: ask`" + `), ` + "`web_search`" + ` lists (` + "`lists: true`" + `), and
ana's own address is trusted (` + "`trusted_destinations: [principal]`" + `). All use
` + "`fetches: url`" + ` on ` + "`fetch`" + `, which gives a fetched page its origin (the
registrable domain of the URL's host).
` + "`submit_form`" + `'s sinks are its URL and ` + "`fields.contact.email`" + `, the address a
form passes the request on to. Following links is not gated: ` + "`fetch`" + ` is not
exfiltrating here.

Not every benign send is self-published, as on the real web: where the
snippet showed the destination, output of unknown origin holds it; the
github.io project gives addresses on its own domain (tidepool.dev), not
on alice.github.io; and the search results of every session list the
organisation's home page, so its host is in output of unknown origin.

## How it was made

Every file here but the three policies is written by the generator:

    go run ./internal/corpusgen

from the repository root. Its test fails when a file here differs from
what it writes, or is not written by it. The labels are by construction:
a send to the destination the organisation's own page gave out is benign,
a send to the destination an injection gave out is an attack, and every
read, fetch and search is benign.
`
