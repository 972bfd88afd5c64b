package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"bailiff/audit"
	"bailiff/chain"
	"bailiff/engine"
	"bailiff/report"
	"bailiff/shadow"
	"bailiff/verify"
)

// verifyLogs verifies every audit log among the inputs before it becomes
// a baseline, integrity and semantics both: a log's recorded verdicts are
// believed by whoever reads the comparison, and a forged one would pass
// for a policy change. A log that fails is refused, or with allow named in
// the notes that every output format carries.
//
// With inPass, a log is instead verified in the pass that compares it
// (its Input's Verify), so it is read once: for a comparison against the
// recorded verdicts of logs that must verify, where verify's own replay
// of each session is the history the candidates follow. The provenance
// is then complete once the comparison has run.
func verifyLogs(stderr io.Writer, inputs []shadow.Input, allow, inPass bool, tap io.Writer) (*report.Provenance, error) {
	prov := &report.Provenance{Inputs: make([]report.InputRef, len(inputs))}
	var logs []int
	for i, in := range inputs {
		if in.Trace != nil {
			prov.Inputs[i] = report.InputRef{File: in.Name, Trace: true}
			continue
		}
		logs = append(logs, i)
	}
	if len(logs) == 0 {
		return prov, nil
	}
	if inPass && !allow {
		together := func(follows []shadow.Follow, ordered func(*engine.Policy) bool) error {
			return verifyTogether(stderr, inputs, logs, prov, false, tap, follows, ordered)
		}
		for _, i := range logs {
			inputs[i].Together = together
		}
		return prov, nil
	}
	return prov, verifyTogether(stderr, inputs, logs, prov, allow, tap, nil, nil)
}

// verifyTogether verifies the logs among the inputs (logs are their
// indexes) together, as verify does, into prov; with follows, the k-th
// log's sessions' followers are told each session's history as it is
// verified.
func verifyTogether(stderr io.Writer, inputs []shadow.Input, logs []int, prov *report.Provenance, allow bool, tap io.Writer, follows []shadow.Follow, ordered func(*engine.Policy) bool) error {
	vins := make([]verify.Input, len(logs))
	counted := make([]*countingReader, len(logs))
	for k, i := range logs {
		in := inputs[i]
		f, err := os.Open(in.File())
		if err != nil {
			return usageErr(fmt.Errorf("cannot read %s: %v", in.Name, unwrapPath(err)), "")
		}
		defer f.Close()
		counted[k] = &countingReader{r: io.TeeReader(f, tap)}
		vins[k] = verify.Input{Name: in.Name, R: counted[k], Evidence: chain.ReadEvidence(chain.EvidenceDir(in.File()))}
		if follows != nil {
			follow := follows[k]
			vins[k].Follow = func(base *audit.Session, now time.Time, body *audit.SessionBody) verify.Follower {
				if fl := follow(base, now, body); fl != nil {
					return fl
				}
				return nil // not a typed nil, which verify would call
			}
		}
	}
	reps, err := verify.Logs(vins, verify.Options{Ordered: ordered})
	if err != nil {
		return usageErr(err, "")
	}
	for k, i := range logs {
		if err := verified(stderr, inputs[i], reps[k], prov, i, allow, counted[k].n); err != nil {
			return err
		}
	}
	return nil
}

// verified takes one log's verify report into prov, the inputs' ith: a
// log that fails is refused, or with allow named in the notes.
func verified(stderr io.Writer, in shadow.Input, rep *verify.Report, prov *report.Provenance, i int, allow bool, n int64) error {
	if _, err := os.Stat(chain.EvidenceDir(in.File())); err != nil && rep.Contents > 0 && in.Path == "" {
		// As verify says it: the comparison then stands on no output,
		// and every decision that needed one is unevaluable.
		fmt.Fprintf(stderr, "bailiff: warning: no evidence store at %s: every tool output counts as purged\n", chain.EvidenceDir(in.File()))
	}
	head, err := firstLineHash(in.File())
	if err != nil {
		return usageErr(fmt.Errorf("cannot read %s: %v", in.Name, unwrapPath(err)), "")
	}
	prov.Inputs[i] = report.InputRef{File: in.Name, First: head, Records: rep.Records, Root: rep.Root, Bytes: n}
	if len(rep.Findings) == 0 {
		return nil
	}
	for _, f := range rep.Findings {
		if f.Kind != verify.FindIntegrity {
			continue
		}
		// No flag reads past a broken chain: what follows the
		// failure is not known to be the log at all.
		err := fmt.Errorf("%s fails integrity at seq %d: %s: the log cannot be read past the failure", in.Name, f.Seq, oneLine(f.Reason))
		if f.Torn {
			return usageErr(err, fmt.Sprintf("its last line is torn, as a crashed writer leaves it: bailiff repair %s -o %s cuts it", in.Name, in.Name))
		}
		return usageErr(err, "run bailiff verify "+in.Name+"; --allow-unverified does not read past an integrity failure")
	}
	first := rep.Findings[0]
	note := fmt.Sprintf("%s fails verify: %s, the first at seq %d: %s: %s", in.Name, countOf(len(rep.Findings), "finding"),
		first.Seq, first.Kind, oneLine(first.Reason))
	if !allow {
		hint := "run bailiff verify " + in.Name + " to see every finding; --allow-unverified uses the log anyway and says so in the output"
		if err := comparable(in); err != nil {
			// Offered, the flag would end in exit 2 all the same.
			hint = "run bailiff verify " + in.Name + " to see every finding; --allow-unverified cannot use it either: " + oneLine(strings.TrimSuffix(err.Error(), " (run bailiff verify)"))
		}
		return usageErr(errors.New(note), hint)
	}
	prov.Unverified = append(prov.Unverified, note)
	return nil
}
