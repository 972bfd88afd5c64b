package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"bailiff/chain"
	"bailiff/internal/clientconfig"

	"github.com/spf13/cobra"
)

// output is how a command writes a named file: "-" is standard output,
// and a file that exists is replaced only under --force. Every command
// that writes files follows it, so none replaces a file by surprise.
type output struct {
	stdout io.Writer
	force  bool
}

func (o *output) register(c *cobra.Command) {
	c.Flags().BoolVar(&o.force, "force", false, "replace output files that already exist")
}

func (o *output) write(name string, data []byte) error {
	return o.writeFrom(name, func(w io.Writer) error {
		if _, err := w.Write(data); err != nil {
			return usageErr(fmt.Errorf("cannot write %s: %v", name, err), "")
		}
		return nil
	})
}

// writeFrom writes name from fill through a temporary file, so a failed
// command leaves no partial output and replaces nothing.
func (o *output) writeFrom(name string, fill func(w io.Writer) error) error {
	if name == "-" {
		return fill(o.stdout)
	}
	if err := o.free(name); err != nil {
		return err
	}
	return writeAtomic(name, !o.force, fill)
}

// free refuses name early when writing it later would be refused, so
// that a command refuses before it does anything else (such as append a
// checkpoint to a log).
func (o *output) free(name string) error {
	if name == "-" {
		return nil
	}
	fi, err := os.Lstat(name)
	switch {
	case err != nil:
		return nil
	case fi.IsDir():
		// Not even --force: renaming a file over a directory fails, and
		// by then another output may have been written.
		return usageErr(fmt.Errorf("%s is a directory: an output must be a file", name), "")
	case !o.force:
		return usageErr(fmt.Errorf("%s exists: it is replaced only with --force", name), "")
	}
	return nil
}

// canWrite refuses an output whose directory cannot take it, by making
// and removing a temporary file there: found only at the end, it would
// come after other outputs, or an append to a log, were already written.
func canWrite(name string) error {
	if name == "-" {
		return nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".probe*")
	if err != nil {
		return usageErr(fmt.Errorf("cannot write %s: %v", name, unwrapPath(err)), "")
	}
	tmp.Close()
	os.Remove(tmp.Name())
	return nil
}

// lands reports whether the file name would lie inside the directory
// dir, following links in name's directory, as the write would.
func lands(name, dir string) bool {
	d, err := filepath.Abs(dir)
	if err != nil {
		return false
	}
	if real, err := filepath.EvalSymlinks(d); err == nil {
		d = real
	}
	parent, err := filepath.Abs(filepath.Dir(name))
	if err != nil {
		return false
	}
	if real, err := filepath.EvalSymlinks(parent); err == nil {
		parent = real
	}
	return clientconfig.Within(parent, d)
}

// stores are the directories beside a log that are part of it: its
// evidence and its pending approvals. An output written into one would
// replace a piece of the log's evidence.
func stores(log string) []string {
	return []string{chain.EvidenceDir(log), log + ".approvals"}
}

// check refuses, before anything is written, outputs that would destroy
// what the command reads or what it writes: an output that is one of the
// inputs (--force would replace the very log being read), two outputs
// that are one file, or two on standard output. Each must also be free.
func (o *output) check(inputs []string, outs ...string) error {
	var named []string
	for _, out := range outs {
		if out == "" {
			continue
		}
		for _, in := range inputs {
			if in != "" && sameFile(in, out) {
				return usageErr(fmt.Errorf("%s is an input of this command: it cannot also be an output", out), "")
			}
			for _, dir := range stores(in) {
				if in != "" && in != "-" && out != "-" && lands(out, dir) {
					return usageErr(fmt.Errorf("%s is inside %s, which belongs to the input %s: an output cannot go there", out, dir, in), "")
				}
			}
		}
		for _, prev := range named {
			if out == prev || sameFile(out, prev) {
				if out == "-" {
					return usageErr(errors.New("only one output can go to standard output (-)"), "")
				}
				return usageErr(fmt.Errorf("%s is given for two outputs", out), "")
			}
		}
		if err := o.free(out); err != nil {
			return err
		}
		if err := canWrite(out); err != nil {
			return err
		}
		named = append(named, out)
	}
	return nil
}

// sameFile reports whether a and b name one file: the same inode when
// both exist (a link or another spelling of the path is still the same
// file), else the same absolute path.
func sameFile(a, b string) bool {
	if a == "-" || b == "-" {
		return false
	}
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	if errA == nil && errB == nil {
		return os.SameFile(fa, fb)
	}
	pa, errA := filepath.Abs(a)
	pb, errB := filepath.Abs(b)
	return errA == nil && errB == nil && pa == pb
}
