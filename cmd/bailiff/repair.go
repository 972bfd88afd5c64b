package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"bailiff/audit"
	"bailiff/chain"
)

func newRepair(stderr io.Writer) *cobra.Command {
	var (
		out   string
		force bool
		pack  bool
	)
	c := &cobra.Command{
		Use:   "repair LOG -o OUT | repair --pack LOG",
		Short: "Cut the torn last line a crashed writer left, or pack an old evidence store",
		Long: `repair copies a log to OUT without its torn last line: the partial record
a writer killed mid-write leaves. Every whole record is kept, so the copy
verifies. A log that fails integrity anywhere else is refused (exit 1):
repair never hides an edit; a file that is no log is refused (exit 2).
A last record that is whole but lacks its newline is kept, with the
newline added. The evidence the kept records refer to is copied to
OUT.evidence/. OUT may be LOG itself; it is replaced only once the copy
is complete. Any other file that exists is replaced only with --force.

repair --pack converts LOG's evidence store from one file per content
(written before packs) to packs, in place: the contents are written to a
new pack and synced, and only then are the files removed. The log is not
touched. It can be run while a gateway writes the log, and again after a
crash to finish.`,
		Example: `  bailiff repair audit.jsonl -o audit.jsonl
  bailiff verify audit.jsonl
  bailiff repair --pack audit.jsonl`,
		Args: exactArgs(1),
		PreRunE: func(cmd *cobra.Command, args []string) error {
			if pack {
				if out != "" || force {
					return usageErr(errors.New("repair --pack converts LOG's store in place: it takes no -o or --force"), "")
				}
				return nil
			}
			if out == "" {
				return usageErr(errors.New("repair needs -o OUT"), "")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if pack {
				return runPack(stderr, args[0])
			}
			return runRepair(stderr, args[0], out, force)
		},
	}
	c.Flags().BoolVar(&pack, "pack", false, "convert LOG's evidence store to packs, in place")
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

// runPack converts log's evidence store to packs.
func runPack(stderr io.Writer, log string) error {
	if err := checkFile(log, kindLog); err != nil {
		return err
	}
	ev := chain.OpenEvidence(chain.EvidenceDir(log))
	if ev.Absent() {
		return usageErr(fmt.Errorf("%s has no evidence store at %s: nothing to pack", log, ev.Dir), "")
	}
	done, err := ev.Pack()
	if err != nil {
		return usageErr(fmt.Errorf("cannot pack %s: %v", ev.Dir, unwrapPath(err)), "")
	}
	if done.Contents+done.Marks+done.Dropped == 0 {
		fmt.Fprintf(stderr, "bailiff: %s holds no per-file evidence: nothing to pack\n", ev.Dir)
	} else {
		fmt.Fprintf(stderr, "bailiff: packed %s (%s) and %s in %s\n", countOf(done.Contents, "content"), countOf(int(done.Bytes), "byte"), countOf(done.Marks, "purge mark"), ev.Dir)
	}
	if done.Dropped > 0 {
		fmt.Fprintf(stderr, "bailiff: removed %s marked purged (a purge that had not finished) instead of packing it\n", countOf(done.Dropped, "content"))
	}
	if len(done.Strange) > 0 {
		fmt.Fprintf(stderr, "bailiff: warning: left %s that %s no evidence: %s\n", countOf(len(done.Strange), "file"), map[bool]string{true: "is", false: "are"}[len(done.Strange) == 1], strings.Join(done.Strange, ", "))
	}
	if done.Altered > 0 {
		fmt.Fprintf(stderr, "bailiff: warning: %s held bytes that do not hash to the file's name; packed as found, so bailiff verify %s still reports them altered\n", countOf(done.Altered, "content"), log)
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
	src, dst := chain.OpenEvidence(chain.EvidenceDir(from)), chain.OpenEvidence(chain.EvidenceDir(out))
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
			if err := dst.Close(); err != nil {
				return usageErr(fmt.Errorf("cannot write %s: %v", dst.Dir, err), "")
			}
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
