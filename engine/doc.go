// Package engine is bailiff's policy model and its pure decision
// function. Read it first: everything else in bailiff feeds it events or
// reads back what it decided.
//
// # The decision
//
// [Decide](policy, state, call, now) is the whole of what decides a
// tools/call. It reads no clock (now is given), no environment, no
// network and no file, and it never changes its arguments: the same
// policy, state, call and time give the same [Decision] forever, which is
// what lets verify recompute every recorded verdict years later. A
// decision is a [Verdict] (allow, deny or ask; no answer to an ask is a
// deny), the [Check] that made it, the rule that matched, and a reason a
// human can read. A panic inside the engine is a deny by CheckInternal,
// never a crash and never an allow.
//
// The checks run in a fixed order, each able to deny or ask but never to
// loosen what an earlier one said:
//
//  1. pinning: the tool must have been listed when the session started,
//     with the definition it has now;
//  2. rules: the first rule whose server, tool and argument predicates
//     match decides, deny, ask or allow (none matching: deny by default);
//     a rule's scopes must all be the principal's;
//  3. the tool's contract: budgets (max_calls), paths and patterns its
//     arguments must keep to;
//  4. taint: a destination the agent sends to (an address, a URL, a
//     host) that came from untrusted output is asked or denied, at the
//     tier of the output that held it (third party, first party, self
//     published), unless the policy trusts it;
//  5. approval: an ask is settled by a human's [Grant], bound to the
//     exact call by its arguments' digest; [Answer] applies one.
//
// A call whose arguments were redacted before they were written down is
// decided for every value its unknown parts could take: when the
// verdicts differ, the decision is Unevaluable and lists them.
//
// A tool is one [ToolRef]: its server and its name, embedded in every
// [Call], [Grant] and output [Source] that names one. Server "" is the
// session's own until the driver resolves it; a gateway lists a tool as
// "<server>.<tool>" ([ToolRef.String]) and routes a name at its first dot
// ([ParseToolRef]), which is why [CheckServerName] refuses a dot in a
// server's name.
//
// # The state
//
// [State] is what the engine remembers of one session: the tools pinned
// at its start, the budget spent, the output seen (indexed so that a
// destination can be looked up in all of it), and the grants given. The
// engine never drives a state itself: package audit applies each step of
// a session to it, in order, and Decide changes nothing a later decision
// could tell (it may index output that waited for a decision to need it).
//
// # The policy
//
// [Load] reads a policy strictly (unknown keys, duplicate rules and
// contradictions are errors with their line), compiles it, and gives its
// canonical form and version, which every session record carries. [Policy.Lint]
// finds what loads but is likely wrong, [Policy.Explain] says what a policy does
// to each tool, and [Policy.Without] switches one check or rule off, for
// ablation. The format is docs/policy.md.
package engine
