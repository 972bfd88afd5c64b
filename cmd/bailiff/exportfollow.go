package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"bailiff/chain"
	"bailiff/export"
	"bailiff/verify"
)

// followPoll is how often a follower looks for new records.
const followPoll = 200 * time.Millisecond

// follower exports one log and then what is appended to it.
type follower struct {
	opt    verify.Options
	name   string
	format export.Format
	w      io.Writer
	stdin  io.Reader
	stderr io.Writer
	allow  bool
}

func runFollow(stdin io.Reader, stdout, stderr io.Writer, p exportParams, opt verify.Options, f export.Format, name string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	w := stdout
	if p.to != "-" {
		if err := p.out.free(p.to); err != nil {
			return err
		}
		// A stream, not a file written whole: what was written stays
		// written when the follower stops.
		out, err := os.OpenFile(p.to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			return usageErr(fmt.Errorf("cannot write %s: %v", p.to, unwrapPath(err)), "")
		}
		defer out.Close()
		w = out
	}
	fl := &follower{opt: opt, name: name, format: f, w: w, stdin: stdin, stderr: stderr, allow: p.allowUnverified}
	if _, err := os.Stat(name); err != nil {
		// As after a rotation: the gateway may not have started yet.
		fmt.Fprintf(stderr, "bailiff: waiting for %s (%v)\n", name, unwrapPath(err))
	}
	for {
		f, tail, err := fl.start(ctx)
		if err != nil || f == nil {
			return err
		}
		again, err := fl.tail(ctx, f, tail)
		f.Close()
		if err != nil || !again {
			return err
		}
	}
}

// start waits for a log with a record at the name, verifies it and
// exports it to where it was verified. It returns no file once ctx is
// done.
func (fl *follower) start(ctx context.Context) (*os.File, *export.Tail, error) {
	for {
		if f, tail, err := fl.try(); err != nil || f != nil {
			return f, tail, err
		}
		select {
		case <-ctx.Done():
			return nil, nil, nil
		case <-time.After(followPoll):
		}
	}
}

// try is one attempt of start: no file and no error when there is no
// whole record at the name yet, or the name moved to another file while
// it was being verified.
func (fl *follower) try() (*os.File, *export.Tail, error) {
	f, err := os.Open(fl.name)
	if err != nil {
		return nil, nil, nil
	}
	head := make([]byte, 64<<10)
	n, _ := f.ReadAt(head, 0)
	if bytes.IndexByte(head[:n], '\n') < 0 && n < len(head) {
		f.Close()
		return nil, nil, nil // not one whole record yet
	}
	reports, err := verifyAll(fl.stdin, fl.stderr, []string{fl.name}, "", fl.opt, &progress{})
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !sameAsName(f, fl.name) {
		f.Close()
		return nil, nil, nil // rotated while verified: verify the new one
	}
	level, err := exportLevel(fl.name, reports[0], fl.allow)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	rep := reports[0]
	var ends []*export.Tail
	err = staged(fl.w, true, func(w io.Writer) error {
		ends, err = export.Write(w, fl.format, []export.Log{{Name: fl.name, R: io.NewSectionReader(f, 0, 1<<62), Level: level, Records: rep.Records, Root: rep.Root}})
		return err
	})
	if err != nil {
		f.Close()
		return nil, nil, usageErr(err, "")
	}
	if level == export.None {
		ends[0].Level = export.None // a tail on a prefix with findings claims nothing
	}
	return f, ends[0], nil
}

// sameAsName says whether f is still the file at name.
func sameAsName(f *os.File, name string) bool {
	a, err1 := f.Stat()
	b, err2 := os.Stat(name)
	return err1 == nil && err2 == nil && os.SameFile(a, b)
}

// tail exports each whole record appended to f after t, until ctx is
// done (again false) or the log at the name is another file and f's
// writer has let it go (again true: follow the new one).
func (fl *follower) tail(ctx context.Context, f *os.File, t *export.Tail) (again bool, err error) {
	var pending, out []byte
	chunk := make([]byte, 256<<10)
	for {
		if !stillEndsWith(f, t) {
			fmt.Fprintf(fl.stderr, "bailiff: warning: %s no longer holds record %d where it was read (cut and written again): following it as a new log\n", fl.name, t.Seq)
			return true, nil
		}
		n, rerr := f.ReadAt(chunk, t.Offset+int64(len(pending)))
		if rerr != nil && rerr != io.EOF {
			return false, usageErr(fmt.Errorf("cannot read %s: %v", fl.name, rerr), "")
		}
		pending = append(pending, chunk[:n]...)
		for {
			i := bytes.IndexByte(pending, '\n')
			if i < 0 {
				break
			}
			if out, err = t.Next(out, pending[:i]); err != nil {
				fl.w.Write(out)
				if !stillEndsWith(f, t) {
					// Cut and written again between the look and the read.
					fmt.Fprintf(fl.stderr, "bailiff: warning: %s no longer holds record %d where it was read (cut and written again): following it as a new log\n", fl.name, t.Seq)
					return true, nil
				}
				return false, findingErr(fmt.Errorf("%s fails integrity at %v: follow stops", fl.name, err), "bailiff verify "+fl.name+" says more")
			}
			pending = pending[i+1:]
		}
		if len(out) > 0 {
			if _, err := fl.w.Write(out); err != nil {
				return false, usageErr(err, "")
			}
			out = out[:0]
		}
		if len(pending) > maxRecordLine {
			return false, findingErr(fmt.Errorf("%s: record %d is longer than any record", fl.name, t.Seq+1), "")
		}
		if n > 0 {
			continue // there may be more
		}
		if moved, done := fl.moved(f, t.Offset+int64(len(pending))); done {
			if len(pending) > 0 {
				fmt.Fprintf(fl.stderr, "bailiff: warning: %s was rotated with an unfinished last line after record %d: it was not exported\n", fl.name, t.Seq)
			}
			return true, nil
		} else if moved {
			continue // rotated, but its writer still appends to it
		}
		select {
		case <-ctx.Done():
			return false, nil
		case <-time.After(followPoll):
		}
	}
}

// stillEndsWith says whether f still holds t's last record where it was
// read: a log cut and written again in place (copytruncate) may have
// grown past the offset before the next look, and its bytes there are
// then another log's.
func stillEndsWith(f *os.File, t *export.Tail) bool {
	if t.Seq < 0 {
		return true
	}
	want := fmt.Appendf(nil, "%x\"}\n", t.Hash[:])
	got := make([]byte, len(want))
	_, err := f.ReadAt(got, t.Offset-int64(len(want)))
	return err == nil && bytes.Equal(got, want)
}

// maxRecordLine bounds a record line a follower holds while it waits
// for its end; no writer writes a longer one.
const maxRecordLine = 64 << 20

// moved says whether the name no longer holds f as it was read to read
// (renamed away, removed, or cut shorter than read), and done when
// nothing more will be appended to f: its writer has let it go, or it
// was cut (copytruncate), whose new records start a new chain.
func (fl *follower) moved(f *os.File, read int64) (moved, done bool) {
	st, err := f.Stat()
	if err == nil && st.Size() < read {
		fmt.Fprintf(fl.stderr, "bailiff: warning: %s was cut shorter than was read: following it as a new log\n", fl.name)
		return true, true
	}
	if sameAsName(f, fl.name) {
		return false, false
	}
	return true, !chain.HeldByWriter(f)
}
