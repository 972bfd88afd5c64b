package report

import (
	"sort"
	"strings"
)

// advice says, for each kind of finding, what it means for a reviewer and
// what to do next: one sentence, in words a compliance reader uses.
var advice = map[string]string{
	// What verify found in a log.
	"verify-integrity":  "The log was edited, cut or reordered after it was written, so nothing it records can be trusted: secure the original, and find who could write to it.",
	"verify-checkpoint": "The log no longer matches a checkpoint signed earlier (records removed or rolled back): treat the missing records as an incident and restore them from a copy.",
	"verify-policy":     "The policy a session records is not the one it claims to be, so its decisions cannot be checked: find who changed the log, and re-verify a trusted copy.",
	"verify-verdict":    "A recorded decision is not what the policy decides for that call, so the gateway was bypassed or the log forged: investigate the call before trusting the rest.",
	"verify-grant":      "A human approval in the log does not check out (unsigned, expired, reused or by the wrong person): treat the call it allowed as unapproved.",
	"verify-record":     "A record does not fit its session (for example a call after the session ended), so the log was altered or a writer misbehaved: investigate before relying on it.",
	"verify-evidence":   "A tool output the log relies on is missing or altered, so the decisions that read it cannot be checked: restore the evidence store from a copy.",
	"unreadable":        "Part of the log could not be read, so the counts cover only what was: repair or restore the log and run the report again.",
	"no-evidence":       "No tool outputs were available, so decisions that depended on them cannot be re-checked: give the log's evidence store (LOG.evidence) beside it.",
	"unevaluable":       "Some decisions depended on data that was redacted or purged and cannot be recomputed: acceptable if that was policy, otherwise keep the evidence longer.",
	// What the policy and the sessions show.
	"policy-mismatch":     "The policy file given is not the one the gateway enforced: review the enforced one (embedded in the log), or deploy the file you meant.",
	"policy-not-last":     "The policy file given was enforced earlier but not by the last session: the policy changed since; review the latest one.",
	"several-policies":    "The sessions ran under more than one policy version: check each change was reviewed (bailiff shadow shows what one changed).",
	"no-rule":             "Some tools a server offers are denied simply because no rule names them: add a rule if they are needed, or leave them denied on purpose.",
	"unanswered-ask":      "Calls waited for a human who never answered, so they were refused: make sure approvers are reachable, or decide whether those calls should be allowed or denied outright.",
	"budget-exhausted":    "Calls were refused because a tool's per-session limit was reached: check whether the agent looped or the limit is too low.",
	"attack-not-stopped":  "A call labelled as an attack got through: tighten the policy so the check that should have stopped it does, and re-run the ablation.",
	"unverified-baseline": "A shadow or ablation result was computed from logs that fail verification, so its numbers rest on unproven history: verify the logs and run it again.",
	// What lint found in the policy.
	"shadowed-rule":           "A rule can never apply because an earlier rule always decides first: delete it or move it above the rule that hides it.",
	"never-matches":           "A rule can never apply (its conditions contradict, or no tool or server matches it): fix its tool or server name, or delete it.",
	"no-rule-for-server":      "No rule lets any call through to a server, so everything it offers is refused: name the server as the policy does, or add its rules.",
	"unlisted-contract":       "A tool contract names a tool no server offers, so it guards nothing: fix the tool name or remove the contract.",
	"no-sink-params":          "A tool that sends data out does not say which arguments are destinations, so a destination under another name goes unchecked: list its sink_params.",
	"write-without-prefixes":  "A tool that writes files has no allowed directories, so every write is refused: add allowed_path_prefixes, or deny the tool outright.",
	"self-published-unset":    "The policy does not say what to do when a site's own page gives the address a tool sends to: choose ask or deny (on_self_published).",
	"self-published-no-fetch": "A setting for addresses a site publishes has no effect, since no tool fetches pages: remove it, or mark the fetching tool.",
	"first-party-loosens":     "A first-party entry trusts far more output than intended (every tool, or fetched pages), weakening the taint check: narrow it to the tools that read your own systems.",
	"first-party-no-source":   "A first-party setting has no effect because no source is marked first-party: remove it, or name the source.",
	"first-party-trusted":     "A first-party entry repeats what a trusted source already covers: remove it.",
	"listing-fetches":         "A tool is marked as listing search results but also fetches pages, so pages it reads may be set aside: mark only pure listing tools.",
	"not-destinations-glob":   "An exclusion pattern takes some arguments out of the destination check: confirm none of them can carry an address.",
	"contract-overlap":        "One tool contract overrides another and drops a control it set: merge the two, or make the narrower one complete.",
	"glob-loosens":            "A wildcard contract loosens a control for any tool whose name matches, including tools a server adds later: name the tools instead.",
	"cost-without-tenants":    "A tool has a cost, but no tenant has a ceiling, so nothing limits what calls spend: add tenants, or drop the cost.",
	"rate-on-deny":            "A rate sits on a rule that refuses every call it matches, so it limits nothing: move it to the rule that allows the calls.",
}

// mdAdvice writes, after the findings, one sentence per kind of finding
// there: what it means, and what to do.
func (p *Pack) mdAdvice(b *mdWriter) {
	kinds := map[string]bool{}
	for _, f := range p.Findings {
		kinds[f.Rule] = true
	}
	if len(kinds) == 0 {
		return
	}
	list := make([]string, 0, len(kinds))
	for k := range kinds {
		list = append(list, k)
	}
	sort.Strings(list)
	b.w("What they mean, and what to do:\n\n")
	for _, k := range list {
		a, ok := advice[k]
		if !ok {
			// A finding no sentence explains still says what it is.
			a = "See the finding's text above, and docs/report.md."
		}
		b.w("- **%s**: %s", mdEscape(k), mdEscape(a))
		if k == "unanswered-ask" && p.FlaggedCalls > 0 {
			// The calls themselves are on the same screen; in HTML, a
			// link away.
			b.w(" [The calls are listed below.](#calls-that-need-a-look)")
		}
		b.w("\n")
	}
	b.w("\n")
}

// glossary is what the pack's own words mean, for a reader who has not
// used bailiff.
var glossary = [][2]string{
	{"allowed, denied", "the gateway passed the call to the tool, or refused it; a refused call never reached the tool."},
	{"asked", "the policy needed a human's yes before the call could go through; until answered, the call is held (not forwarded)."},
	{"answered out of band", "a human answered an ask outside the agent's session (bailiff approve or decline); the agent's retry then used that answer."},
	{"unanswered", "an ask no human answered: the call was never forwarded, and counts as refused."},
	{"unevaluable", "a decision that depended on data later redacted or purged, so it cannot be recomputed now."},
	{"pinning", "each tool's definition is fixed when a session starts; a tool that changes or appears later is refused (a \"rug pull\")."},
	{"taint", "text from outside (mail, web pages, tool outputs) marks the addresses in it; sending data to such an address is refused or asked, since an attacker may have planted it."},
	{"sink gate", "the check that looks at where a call sends data (recipients, URLs, channels) before it goes out."},
	{"default deny", "a call no rule allows is refused."},
	{"verify", "bailiff recomputes every recorded decision from the log alone; a log that verifies shows each decision was the policy's."},
	{"checkpoint", "a signed record of the log's size and hash, kept elsewhere, that shows whether records were later removed."},
	{"shadow", "re-deciding past calls under a proposed policy, to see what it would change."},
	{"ablation", "switching each check off in turn over past calls, to see what each one stops; a dead check decided nothing and changed nothing."},
}

// mdGlossary ends the pack with its terms.
func (p *Pack) mdGlossary(b *mdWriter) {
	b.w("## Glossary\n\n")
	for _, g := range glossary {
		b.w("- **%s**: %s\n", g[0], strings.TrimSpace(g[1]))
	}
	b.w("\n")
}
