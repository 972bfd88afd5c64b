package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"time"

	"bailiff/audit"
	"bailiff/chain"
	"bailiff/report"
	"bailiff/verify"
)

// packLogs verifies the logs together (sessions that share a tenant's
// counts are taken in time order across all of them) and counts each
// one's evidential sessions between since and until, for
// report.BuildPack. A log named "-" is read from stdinFile, where
// standard input was spooled. Every byte of the logs is written to
// progress twice: verified, then summarized.
func packLogs(logs []string, stdinFile string, since, until time.Time, opt verify.Options, progress io.Writer) ([]report.PackLog, *audit.Summary, error) {
	sum := audit.NewSummary(since, until)
	files := make([]string, len(logs))
	for i, name := range logs {
		files[i] = name
		if name == "-" {
			files[i] = stdinFile
		}
	}
	out, err := packInto(sum, logs, files, opt, progress)
	if err != nil {
		return nil, nil, err
	}
	return out, sum, nil
}

// packLog is packLogs of one log, named name, read from file, into sum.
func packLog(sum *audit.Summary, name, file string, opt verify.Options, progress io.Writer) (report.PackLog, error) {
	out, err := packInto(sum, []string{name}, []string{file}, opt, progress)
	if len(out) == 0 {
		return report.PackLog{Name: name}, err
	}
	return out[0], err
}

func packInto(sum *audit.Summary, logs, files []string, opt verify.Options, progress io.Writer) ([]report.PackLog, error) {
	reads := make([]*logRead, len(logs))
	inputs := make([]verify.Input, len(logs))
	for i, name := range logs {
		file := files[i]
		f, err := os.Open(file)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		lr := &logRead{name: name, f: f, ev: chain.ReadEvidence(chain.EvidenceDir(file)), r: f}
		if progress != nil {
			lr.r = io.TeeReader(f, progress)
		}
		// verify reads to the end: what it read is all the summary may
		// read, however much a running gateway appends meanwhile.
		lr.verified = &countingReader{r: lr.r}
		reads[i] = lr
		inputs[i] = verify.Input{Name: name, R: bufio.NewReader(lr.verified), Evidence: lr.ev}
	}
	reps, err := verify.Logs(inputs, opt)
	if err != nil {
		return nil, err
	}
	var out []report.PackLog
	for i, lr := range reads {
		l, err := lr.summarize(sum, reps[i])
		out = append(out, l)
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// logRead is one log of a pack, open.
type logRead struct {
	name     string
	f        *os.File
	r        io.Reader // f, through the progress bar
	ev       chain.Evidence
	verified *countingReader
}

// summarize counts the log's sessions into sum, once verify is done.
func (lr *logRead) summarize(sum *audit.Summary, rep *verify.Report) (report.PackLog, error) {
	l := report.PackLog{Name: lr.name, Report: rep}
	name, f, ev, verified := lr.name, lr.f, lr.ev, lr.verified
	if _, err := f.Seek(0, 0); err != nil {
		return l, err
	}
	var err error
	if l.First, err = chain.FirstLineHash(f); err != nil {
		return l, err
	}
	if !verify.Evidential(l.Report) {
		// Its records are not evidence: summarize nothing of it.
		return l, nil
	}
	if _, err := f.Seek(0, 0); err != nil {
		return l, err
	}
	read, err := sum.Add(name, bufio.NewReader(io.LimitReader(lr.r, verified.n)), ev)
	if err != nil {
		return l, err
	}
	// verify read these bytes whole: a second read that fails, or ends
	// on another count or root, reads a log rewritten in between, and
	// what it counted before it failed is not what was verified.
	if read.Err != nil {
		return l, fmt.Errorf("%s changed while it was read: verified %d records, then could not read it again: %v; run report again on a log nothing rewrites", name, l.Report.Records, read.Err)
	}
	if read.Records != l.Report.Records || read.Root != l.Report.Root {
		return l, fmt.Errorf("%s changed while it was read: verified %d records, then read %d with another root; run report again on a log nothing rewrites", name, l.Report.Records, read.Records)
	}
	l.Read = &read
	l.EvidenceDir = ev.Dir
	_, err = os.Stat(ev.Dir)
	l.NoEvidence = err != nil
	return l, nil
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
