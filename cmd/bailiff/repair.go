package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"bailiff/audit"
	"bailiff/chain"
)

func newRepair(stderr io.Writer) *cobra.Command {
	var (
		out   string
		force bool
	)
	c := &cobra.Command{
		Use:   "repair LOG -o OUT",
		Short: "Cut the torn last line a crashed writer left",
		Long: `repair copies a log to OUT without its torn last line: the partial record
a writer killed mid-write leaves. Every whole record is kept, so the copy
verifies. A log that fails integrity anywhere else is refused (exit 1):
repair never hides an edit; a file that is no log is refused (exit 2).
A last record that is whole but lacks its newline is kept, with the
newline added. The evidence the kept records refer to is copied to
OUT.evidence/. OUT may be LOG itself; it is replaced only once the copy
is complete. Any other file that exists is replaced only with --force.`,
		Example: `  bailiff repair audit.jsonl -o audit.jsonl
  bailiff verify audit.jsonl`,
		Args: exactArgs(1),
		PreRunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return usageErr(errors.New("repair needs -o OUT"), "")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRepair(stderr, args[0], out, force)
		},
	}
	c.Flags().StringVarP(&out, "output", "o", "", "where to write the repaired log")
	c.Flags().BoolVar(&force, "force", false, "replace OUT even when it is another file that exists")
	return c
}

func runRepair(stderr io.Writer, log, out string, force bool) error {
	if err := checkFile(log, kindLog); err != nil {
		return err
	}
	// Repairing in place is the common use; any other file that
	// exists is someone else's and goes only under --force.
	inPlace := sameFile(log, out)
	if !inPlace && !force {
		if _, err := os.Lstat(out); err == nil {
			return usageErr(fmt.Errorf("%s exists: repair replaces it only with --force, or when -o is LOG itself", out), "")
		}
	}
	if !inPlace {
		o := output{force: force}
		if err := o.check([]string{log}, out); err != nil {
			return err
		}
	}
	done, err := repairCopy(log, out, !inPlace && !force)
	if err != nil {
		return err
	}
	if err := carryEvidence(log, out); err != nil {
		return err
	}
	switch {
	case done.Cut > 0:
		fmt.Fprintf(stderr, "bailiff: kept %s, cut %s of a torn last line\n", countOf(int(done.Kept), "record"), countOf(int(done.Cut), "byte"))
	case done.Newline:
		fmt.Fprintf(stderr, "bailiff: kept %s; the last one lacked its newline, which was added\n", countOf(int(done.Kept), "record"))
	default:
		fmt.Fprintf(stderr, "bailiff: kept %s; nothing was torn\n", countOf(int(done.Kept), "record"))
	}
	return nil
}

// repairCopy writes log's whole records to out, which replaces out only
// once complete; exclusive refuses an out that appeared meanwhile.
func repairCopy(log, out string, exclusive bool) (chain.Repaired, error) {
	f, err := os.Open(log)
	if err != nil {
		return chain.Repaired{}, usageErr(fmt.Errorf("cannot read %s: %v", log, unwrapPath(err)), "")
	}
	defer f.Close()
	var done chain.Repaired
	err = writeAtomic(out, exclusive, func(w io.Writer) error {
		bw := bufio.NewWriterSize(w, 1<<20)
		var err error
		done, err = chain.Repair(f, bw)
		var ve *chain.VerifyError
		if errors.As(err, &ve) {
			return readLogErr(log, err, "repair only cuts a torn last line; run bailiff verify "+log)
		}
		if errors.Is(err, chain.ErrNotALog) {
			return usageErr(fmt.Errorf("%s %v", log, err), "repair reads only audit logs")
		}
		if err == nil {
			err = bw.Flush()
		}
		if err != nil {
			return usageErr(fmt.Errorf("cannot repair %s: %v", log, err), "")
		}
		return nil
	})
	return done, err
}

// carryEvidence copies into out's evidence store the content its result
// records refer to, from the store of the log it was repaired from: a
// repaired log without its evidence would verify with every output
// purged. Content the source store does not hold is not made up.
func carryEvidence(from, out string) error {
	src, dst := chain.Evidence{Dir: chain.EvidenceDir(from)}, chain.Evidence{Dir: chain.EvidenceDir(out)}
	a, _ := filepath.Abs(src.Dir)
	b, _ := filepath.Abs(dst.Dir)
	if a == b {
		return nil
	}
	f, err := os.Open(out)
	if err != nil {
		return usageErr(fmt.Errorf("cannot read %s: %v", out, unwrapPath(err)), "")
	}
	defer f.Close()
	rd := chain.NewReader(bufio.NewReaderSize(f, 1<<20))
	for {
		rec, err := rd.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return usageErr(fmt.Errorf("cannot read %s: %v", out, err), "")
		}
		var b audit.ResultBody
		if rec.Kind != chain.KindResult || chain.DecodeBody(rec.Body, &b) != nil || b.Content == "" {
			continue
		}
		if err := src.CopyTo(dst, b.Content); err != nil {
			return usageErr(fmt.Errorf("cannot copy evidence %s: %v", b.Content, err), "")
		}
	}
}
