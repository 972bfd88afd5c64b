package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"bailiff/audit"
	"bailiff/chain"
)

type purgeParams struct {
	session string
	before  string
	out     string
	force   bool
}

func newPurge(stderr io.Writer) *cobra.Command {
	var p purgeParams
	c := &cobra.Command{
		Use:   "purge LOG (--session ID | --before TIME) -o OUT",
		Short: "Delete stored tool output for privacy or retention, keeping the chain valid",
		Long: `purge removes the evidence (the stored content of tool results) of one
session, or of every result recorded before a time, and writes the log to
OUT with the evidence that remains in OUT.evidence/. The log's records are
copied byte for byte: the chain and every checkpoint still verify, since
records hold only digests of content. Decisions that depended on purged
content are reported by verify as unevaluable, never as clean.

Content that another kept result shares is kept. OUT may be LOG itself:
then the evidence is removed in place. Any other OUT, or an OUT.evidence/,
that exists is replaced only with --force, and then OUT.evidence/ is
replaced whole: nothing the old one held survives the purge. The count
printed is what this run removed: a second purge of the same results
removes nothing and says so. Arguments in call records are part of the
chain and cannot be purged; the policy's redact list keeps them out of
the log in the first place.`,
		Example: `  bailiff purge audit.jsonl --session s-2026-11-03-ana -o audit.purged.jsonl
  bailiff purge audit.jsonl --before 2026-06-01T00:00:00Z -o audit.jsonl`,
		Args: exactArgs(1),
		PreRunE: func(cmd *cobra.Command, args []string) error {
			if (p.session == "") == (p.before == "") {
				return usageErr(errors.New("purge needs exactly one of --session and --before"), "")
			}
			if p.out == "" {
				return usageErr(errors.New("purge needs -o OUT"), "")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runPurge(stderr, p, args[0])
		},
	}
	c.Flags().StringVar(&p.session, "session", "", "purge the evidence of this session")
	c.Flags().StringVar(&p.before, "before", "", "purge the evidence of results recorded before this RFC 3339 time")
	c.Flags().StringVarP(&p.out, "output", "o", "", "where to write the log (may be LOG)")
	c.Flags().BoolVar(&p.force, "force", false, "replace OUT and OUT.evidence/ when they exist and OUT is not LOG")
	return c
}

func runPurge(stderr io.Writer, p purgeParams, name string) error {
	var before time.Time
	if p.before != "" {
		var err error
		if before, err = time.Parse(time.RFC3339Nano, p.before); err != nil {
			return usageErr(fmt.Errorf("--before %q is not an RFC 3339 time", p.before), "")
		}
	}
	if err := checkFile(name, kindLog); err != nil {
		return err
	}
	inPlace := sameFile(name, p.out)
	if !inPlace {
		// Checked before the log is read, so a refusal costs nothing.
		if !p.force {
			for _, f := range []string{p.out, chain.EvidenceDir(p.out)} {
				if _, err := os.Lstat(f); err == nil {
					return usageErr(fmt.Errorf("%s exists: purge replaces it only with --force, or when -o is the log itself", f), "")
				}
			}
		}
		o := output{force: p.force}
		if err := o.check([]string{name}, p.out); err != nil {
			return err
		}
		// --force replaces OUT.evidence/ whole: the log read, or its own
		// store, must not be inside it.
		if dst := chain.EvidenceDir(p.out); lands(name, dst) || lands(filepath.Join(chain.EvidenceDir(name), "x"), dst) {
			return usageErr(fmt.Errorf("%s is inside %s, which purge would replace: an output store cannot hold the input", name, dst), "")
		}
	}
	f, err := os.Open(name)
	if err != nil {
		return usageErr(fmt.Errorf("cannot read %s: %v", name, unwrapPath(err)), "")
	}
	defer f.Close()
	src := chain.OpenEvidence(chain.EvidenceDir(name))
	plan, err := chain.PlanPurge(f, src, chain.PurgeSelect{Session: p.session, Before: before, Content: audit.Content})
	if err != nil {
		return readLogErr(name, err, "purge reads only logs that verify; run bailiff verify "+name)
	}
	if p.session != "" && !plan.SessionSeen {
		// A mistyped id would otherwise purge nothing and say so as if
		// that were the request.
		return usageErr(fmt.Errorf("%s holds no session %q", name, p.session), "")
	}
	if inPlace {
		err = plan.InPlace(src)
	} else {
		err = purgeCopy(f, name, p, src, plan)
	}
	var ee *ExitError
	if err != nil && !errors.As(err, &ee) {
		err = usageErr(err, "")
	}
	if err != nil {
		return err
	}
	gone, removed := plan.Gone, plan.Removed
	kept := countOf(len(plan.Kept), "result") + " kept"
	switch {
	case plan.Selected == 0 && p.session == "":
		fmt.Fprintf(stderr, "bailiff: nothing to purge: no result with stored output was recorded before %s (%s)\n", p.before, kept)
	case plan.Selected == 0:
		fmt.Fprintf(stderr, "bailiff: nothing to purge: session %q has no result with stored output (%s)\n", p.session, kept)
	case len(gone) == 0:
		fmt.Fprintf(stderr, "bailiff: nothing to purge: every output selected is shared with a kept result (%s)\n", kept)
	case removed == 0:
		fmt.Fprintf(stderr, "bailiff: nothing was left to purge: the evidence of the %s selected was purged already (%s)\n", countOf(len(gone), "result"), kept)
	default:
		fmt.Fprintf(stderr, "bailiff: purged the evidence of %s (%s)\n", countOf(removed, "result"), kept)
	}
	return nil
}

// purgeCopy writes the log f to p.out byte for byte, with a new evidence
// store holding what is kept and the purge marks of what is gone. The
// store is made beside OUT.evidence/ and renamed into place once the log
// is written; with --force an old OUT.evidence/ is replaced whole.
func purgeCopy(f *os.File, name string, p purgeParams, src chain.Evidence, plan *chain.PurgePlan) error {
	dir := chain.EvidenceDir(p.out)
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "."+filepath.Base(dir)+".tmp*")
	if err != nil {
		return fmt.Errorf("cannot write %s: %v", dir, unwrapPath(err))
	}
	// Nothing half-made is left behind: the new store goes if the copy
	// fails, and once it is renamed this removes nothing.
	defer os.RemoveAll(tmp)
	if err := plan.Fill(src, chain.OpenEvidence(tmp)); err != nil {
		return err
	}
	// The log is copied byte for byte: its records do not change.
	err = writeAtomic(p.out, !p.force, func(w io.Writer) error {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return usageErr(fmt.Errorf("cannot read %s: %v", name, err), "")
		}
		if _, err := io.Copy(w, f); err != nil {
			return usageErr(fmt.Errorf("cannot copy %s: %v", name, err), "")
		}
		return nil
	})
	if err != nil {
		return err
	}
	if _, err := os.Lstat(dir); err == nil {
		// Only with --force: the old store is moved aside, then removed.
		old := tmp + ".old"
		if err := os.Rename(dir, old); err != nil {
			return usageErr(fmt.Errorf("cannot replace %s: %v", dir, unwrapPath(err)), "")
		}
		defer os.RemoveAll(old)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return usageErr(fmt.Errorf("cannot write %s: %v", dir, unwrapPath(err)), "")
	}
	return nil
}
