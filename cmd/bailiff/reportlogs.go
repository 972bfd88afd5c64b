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

// packLogs verifies each log and counts its evidential sessions between
// since and until, for report.BuildPack. A log named "-" is read from
// stdinFile, where standard input was spooled. Every byte of the logs is
// written to progress twice: verified, then summarized.
func packLogs(logs []string, stdinFile string, since, until time.Time, opt verify.Options, progress io.Writer) ([]report.PackLog, *audit.Summary, error) {
	sum := audit.NewSummary(since, until)
	var out []report.PackLog
	for _, name := range logs {
		file := name
		if name == "-" {
			file = stdinFile
		}
		l, err := packLog(sum, name, file, opt, progress)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, l)
	}
	return out, sum, nil
}

func packLog(sum *audit.Summary, name, file string, opt verify.Options, progress io.Writer) (report.PackLog, error) {
	l := report.PackLog{Name: name}
	f, err := os.Open(file)
	if err != nil {
		return l, err
	}
	defer f.Close()
	ev := chain.Evidence{Dir: chain.EvidenceDir(file)}
	var r io.Reader = f
	if progress != nil {
		r = io.TeeReader(f, progress)
	}
	// verify reads to the end: what it read is all the summary may read,
	// however much a running gateway appends meanwhile.
	verified := &countingReader{r: r}
	if l.Report, err = verify.Log(name, bufio.NewReader(verified), ev, opt); err != nil {
		return l, err
	}
	if _, err := f.Seek(0, 0); err != nil {
		return l, err
	}
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
	read, err := sum.Add(name, bufio.NewReader(io.LimitReader(r, verified.n)), ev)
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
