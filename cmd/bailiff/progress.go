package main

import (
	"io"
	"os"
	"time"

	"bailiff/shadow"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progressMin is the least input, in bytes read, worth a bar: below it a
// run ends about as soon as a bar would appear. Tests lower it.
var progressMin int64 = 64 << 20

// progress counts the bytes a long offline run reads, on a bar drawn on
// stderr. It draws only when stderr is a terminal: a pipe, a file or a
// test must see nothing of it, because stderr there is read as errors.
type progress struct{ bar *progressbar.ProgressBar }

// newProgress starts a bar over total bytes of input, labelled what; it
// is a no-op unless stderr is a terminal and total is large.
func newProgress(stderr io.Writer, total int64, what string) *progress {
	f, ok := stderr.(*os.File)
	if !ok || total < progressMin || !term.IsTerminal(int(f.Fd())) {
		return &progress{}
	}
	return &progress{bar: progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(f),
		progressbar.OptionSetDescription(what),
		progressbar.OptionShowBytes(true),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionThrottle(200*time.Millisecond),
		progressbar.OptionSetRenderBlankState(true),
		progressbar.OptionClearOnFinish(),
	)}
}

// Write counts len(b) bytes read; it never fails, so a bar never stops
// the reading it reports on.
func (p *progress) Write(b []byte) (int, error) {
	if p.bar != nil {
		_ = p.bar.Add(len(b))
	}
	return len(b), nil
}

// Add counts n bytes done.
func (p *progress) Add(n int) {
	if p.bar != nil {
		_ = p.bar.Add(n)
	}
}

// Done clears the bar, so the terminal holds only the command's output.
// It may be called more than once (deferred, and before output).
func (p *progress) Done() {
	if p.bar != nil {
		_ = p.bar.Finish()
		p.bar = nil
	}
}

// fileSizes is the bytes of the named files, for a progress total.
func fileSizes(names []string) int64 {
	var n int64
	for _, name := range names {
		if st, err := os.Stat(name); err == nil {
			n += st.Size()
		}
	}
	return n
}

// logProgress starts a bar over the audit logs among the inputs, read
// passes times, and hands it to them.
func logProgress(stderr io.Writer, inputs []shadow.Input, passes int, what string) *progress {
	var logs []string
	for _, in := range inputs {
		if in.Trace == nil {
			logs = append(logs, in.File())
		}
	}
	bar := newProgress(stderr, fileSizes(logs)*int64(passes), what)
	for i := range inputs {
		inputs[i].Progress = bar
	}
	return bar
}
