package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"github.com/spf13/cobra"

	"bailiff/chain"
	"bailiff/report"
	"bailiff/verify"
)

type verifyParams struct {
	checkpoint    string
	key           string
	approvers     []string
	evidence      string
	integrityOnly bool
	format        formatFlag
	export        string
}

func newVerify(stdout, stderr io.Writer) *cobra.Command {
	var p verifyParams
	c := &cobra.Command{
		Use:   "verify LOG...",
		Short: "Check an audit log's integrity and recompute every verdict in it",
		Long: `verify reads audit logs back and reports every finding:

  integrity   the first record whose hash, link to the record before it or
              seq is wrong, or a torn last line (bailiff repair cuts it)
  checkpoint  with --checkpoint: the log is shorter than the checkpoint
              (truncated) or its first records are not the ones signed
              (rewritten, rolled back)
  policy      a session's embedded policy was edited or does not load
  verdict     a recorded decision the engine does not recompute from the
              session's own records (policy, pins, outputs, grants)
  grant       a grant that does not answer what it claims
  evidence    result content that is missing (gone without a purge) or
              altered (its bytes do not match its digest)
  record      a record that cannot be read or does not fit its session

Decisions that depended on redacted arguments or purged evidence are listed
as unevaluable, with the reason; they are not failures. Exit 0 when clean,
1 with findings, 2 when a log cannot be read, is empty or is not an audit
log at all (a trace, a policy, a binary). A directory argument means
every *.jsonl file in it; logs and the sessions in them are verified in
parallel. Each log's evidence is read from LOG.evidence/.

Timestamps that go back (a record earlier than the one before it) are a
warning, printed on stderr and, with --format json, as "warning" lines:
they do not change the exit code. --integrity-only does not read times.

--format json prints one object per line: a "log" line per log, then its
"finding", "unevaluable" and "warning" lines, each with a "type" field.

--export FILE also checks a copy bailiff export wrote (or a SIEM's copy of
it, one event per line) against the logs, as they were verified: each event
must be its record's, every record must have one event, and none may claim
"verified": "full" for a log with findings. Each event dropped, altered,
invented, repeated or unreadable is named, the first in chain order first;
a copy that differs is a finding (exit 1).`,
		Example: `  bailiff verify audit.jsonl
  bailiff verify --checkpoint audit.ckpt --key audit.pub audit.jsonl
  bailiff verify --integrity-only --format json logs/
  bailiff verify --export audit.events.ndjson audit.jsonl`,
		Args: minArgs(1),
		PreRunE: func(cmd *cobra.Command, args []string) error {
			if p.export != "" && p.integrityOnly {
				return usageErr(errors.New("--export checks the verified claim of each event, which --integrity-only does not establish"), "bailiff verify --export "+p.export+" LOG...")
			}
			if p.checkpoint != "" && p.key == "" {
				return usageErr(errors.New("--checkpoint needs --key, the public key it was signed with"), "bailiff verify --checkpoint audit.ckpt --key audit.pub audit.jsonl")
			}
			_, err := p.format.get()
			return err
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runVerify(cmd.InOrStdin(), stdout, stderr, p, args)
		},
	}
	c.Flags().StringVar(&p.checkpoint, "checkpoint", "", "signed checkpoint of the log, kept elsewhere")
	c.Flags().StringVar(&p.key, "key", "", "public key file the checkpoints are signed with")
	c.Flags().StringArrayVar(&p.approvers, "approver-key", nil, "trust only these approver public keys (or .pub files), whatever a session record lists (repeatable)")
	c.Flags().StringVar(&p.evidence, "evidence", "", "evidence directory (default LOG.evidence; one log only)")
	c.Flags().BoolVar(&p.integrityOnly, "integrity-only", false, "check hashes, links and seqs only, not verdicts")
	c.Flags().StringVar(&p.export, "export", "", "also check this copy bailiff export wrote against the logs")
	p.format.register(c)
	return c
}

// readPrivateKey and readPublicKey read a key file and check its kind
// first: the wrong half of a pair is the caller's mistake, named by the
// key's file (exit 2), never a finding about the log or checkpoint it
// was meant to check.
func readPrivateKey(stdin io.Reader, name string) (string, error) {
	return readKeyAs(stdin, name, kindPrivateKey, chain.ParsePrivateKey)
}

func readPublicKey(stdin io.Reader, name string) (string, error) {
	return readKeyAs(stdin, name, kindPublicKey, chain.ParsePublicKey)
}

func otherHalf(k fileKind) fileKind {
	if k == kindPrivateKey {
		return kindPublicKey
	}
	return kindPrivateKey
}

func readKeyAs(stdin io.Reader, name string, want fileKind, parse func(string) (string, error)) (string, error) {
	// Either half passes the sniff: parse names the wrong one, with a hint.
	b, err := readInput(stdin, name, want, otherHalf(want))
	if err != nil {
		return "", err
	}
	k, err := parse(string(b))
	if err != nil {
		return "", usageErr(fmt.Errorf("%s %v", name, err), keyHint(err))
	}
	return k, nil
}

func keyHint(err error) string {
	switch {
	case errors.Is(err, chain.ErrPublicKey):
		return "give the .key file bailiff keygen wrote beside it"
	case errors.Is(err, chain.ErrPrivateKey):
		return "give the .pub file bailiff keygen wrote beside it; the private key stays with its signer"
	}
	return "bailiff keygen makes a key pair"
}

// offlineMemory sets the collector for the commands that read whole logs
// (verify, shadow, ablate) and returns what puts it back. They keep
// little per session (large output spills to disk) and allocate much
// that dies at once, so the collector may let the heap grow to three
// times what is live (offlineGCPercent) where the default pacing stops at
// twice: it runs half as often. The soft limit makes the collector work
// harder before the process passes it, without turning it off: with GC
// off and a fixed limit, a live heap above the limit meant collecting
// without pause. The limit follows the live heap up, though: many logs
// read at once hold as many sessions open, and a live heap past a fixed
// limit had the collector run back to back (a hundred logs verified 4x
// slower than one log of their size).
func offlineMemory() func() {
	gc := debug.SetGCPercent(offlineGCPercent)
	limit := debug.SetMemoryLimit(offlineLimit)
	stop, done := make(chan struct{}), make(chan struct{})
	go followLiveHeap(stop, done, liveHeap)
	return func() {
		close(stop)
		<-done
		debug.SetGCPercent(gc)
		debug.SetMemoryLimit(limit)
	}
}

// offlineLimit is the soft memory limit of the offline commands while
// what is live stays under two thirds of it. With the runtime's own
// memory and the reader's buffers a process stays about 18 MB above it,
// under the 100 MB the offline passes aim at. offlineGCPercent and the
// limit were measured together (docs/decisions.md, "The collector of the
// offline passes").
const (
	offlineLimit     = 64 << 20
	offlineHeadroom  = 32 << 20
	offlineGCPercent = 200
)

// followLiveHeap keeps the memory limit at half again the live heap, at
// least offlineHeadroom above it, and never under offlineLimit, until
// stop is closed. The headroom is for one long session, whose history is
// all live: with half again alone, the collector ran every 24 MB over a
// 48 MB live heap.
func followLiveHeap(stop <-chan struct{}, done chan<- struct{}, live func() int64) {
	defer close(done)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		n := live()
		debug.SetMemoryLimit(max(offlineLimit, n+n/2, n+offlineHeadroom))
	}
}

// liveHeap is the heap the last collection found live.
func liveHeap() int64 {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(min(sample[0].Value.Uint64(), 1<<62))
}

func runVerify(stdin io.Reader, stdout, stderr io.Writer, p verifyParams, args []string) error {
	defer offlineMemory()()
	files, err := logFiles(args)
	if err != nil {
		return err
	}
	opt, err := verifyOptions(stdin, p, files)
	if err != nil {
		return err
	}
	if p.evidence != "" && len(files) != 1 {
		return usageErr(errors.New("--evidence is for one log"), "")
	}
	var copied *os.File
	if p.export != "" {
		if copied, err = openExported(p.export, files); err != nil {
			return err
		}
		defer copied.Close()
	}
	bar := newProgress(stderr, fileSizes(files), "verify")
	defer bar.Done()
	reports, err := verifyAll(stdin, stderr, files, p.evidence, opt, bar)
	if err != nil {
		return err
	}
	f, _ := p.format.get()
	var out bytes.Buffer
	if err := report.Verify(&out, f, reports); err != nil {
		return err
	}
	differs := false
	if copied != nil {
		res, err := checkExport(copied, files, reports)
		if err != nil {
			return err
		}
		if err := report.ExportCheck(&out, f, p.export, res); err != nil {
			return err
		}
		differs = res.Differs()
	}
	if _, err := stdout.Write(out.Bytes()); err != nil {
		return err
	}
	if differs {
		return findings
	}
	for _, r := range reports {
		if len(r.Findings) > 0 {
			return findings
		}
	}
	return nil
}

// verifyOptions reads what the logs are checked against: the approver
// keys, the log's public key and the checkpoint it signed.
func verifyOptions(stdin io.Reader, p verifyParams, files []string) (verify.Options, error) {
	var err error
	opt := verify.Options{IntegrityOnly: p.integrityOnly}
	if len(p.approvers) > 0 {
		if opt.ApproverKeys, err = loadApproverKeys(stdin, p.approvers, ".", "verify"); err != nil {
			return opt, err
		}
	}
	if p.key != "" {
		if opt.Key, err = readPublicKey(stdin, p.key); err != nil {
			return opt, err
		}
		if err := wantLogKey(p.key, opt.Key); err != nil {
			return opt, err
		}
	}
	if p.checkpoint != "" {
		if len(files) != 1 {
			return opt, usageErr(errors.New("--checkpoint is for one log"), "")
		}
		note, err := readInput(stdin, p.checkpoint, kindCheckpoint)
		if err != nil {
			return opt, err
		}
		c, err := chain.OpenCheckpoint(note, opt.Key)
		if err != nil {
			return opt, findingErr(fmt.Errorf("%s: %v", p.checkpoint, err), checkpointHint(err))
		}
		opt.Checkpoint = &c
	}
	return opt, nil
}

// verifyAll verifies the logs together (sessions that share a tenant's
// counts are taken in time order across all of them), and fails if any
// one fails: a report on some logs must not read as a report on all.
func verifyAll(stdin io.Reader, stderr io.Writer, files []string, evidence string, opt verify.Options, bar *progress) (reports []*verify.Report, err error) {
	inputs := make([]verify.Input, len(files))
	dirs := make([]string, len(files))
	for i, name := range files {
		f, err := openInput(stdin, name, kindLog)
		var ee *ExitError
		if err != nil && len(files) > 1 && errors.As(err, &ee) && ee.Hint == "" {
			ee.Hint = fmt.Sprintf("none of the %d logs was reported; verify the others without %s", len(files), name)
		}
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if dirs[i], err = evidenceFor(stderr, name, evidence, opt); err != nil {
			return nil, err
		}
		inputs[i] = verify.Input{Name: name, R: io.TeeReader(f, bar), Evidence: chain.ReadEvidence(dirs[i])}
	}
	live := make([]bool, len(files))
	for i, name := range files {
		live[i] = chain.InUse(name)
	}
	func() {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("internal error: %v", r)
			}
		}()
		reports, err = verify.Logs(inputs, opt)
	}()
	bar.Done()
	if err != nil {
		ee := usageErr(err, "").(*ExitError)
		var le *verify.LogError
		if len(files) > 1 && errors.As(err, &le) {
			// An answer about the others would sit beside no answer
			// about this one: nothing is printed, and the hint says so.
			ee.Hint = fmt.Sprintf("none of the %d logs was reported; verify the others without %s", len(files), files[le.Log])
		}
		return nil, ee
	}
	for i, rep := range reports {
		warnVerify(stderr, files[i], dirs[i], rep, opt, live[i])
	}
	return reports, nil
}

// evidenceFor is the evidence store of log name: the one named, or the
// one beside it. A log on standard input has none unless one is named.
func evidenceFor(stderr io.Writer, name, evidence string, opt verify.Options) (string, error) {
	if evidence == "" && name == "-" {
		if !opt.IntegrityOnly {
			fmt.Fprintf(stderr, "bailiff: warning: a log on standard input has no evidence store unless --evidence names one: every tool output counts as purged\n")
		}
		empty, err := os.MkdirTemp("", "bailiff-no-evidence")
		if err != nil {
			return "", usageErr(err, "")
		}
		os.Remove(empty)
		// A store that does not exist: every output counts as purged,
		// not as missing from a store that should have held it.
		return filepath.Join(empty, "none"), nil
	}
	if evidence == "" {
		return chain.EvidenceDir(name), nil
	}
	return evidence, nil
}

// warnVerify says on stderr what a report's reader should know beside its
// findings, and drops the torn last line of a log still being written.
func warnVerify(stderr io.Writer, name, evidence string, rep *verify.Report, opt verify.Options, live bool) {
	for _, w := range rep.Warnings {
		// A warning is not a finding: the exit code stays what the
		// findings make it. JSON carries it as a "warning" line too.
		fmt.Fprintf(stderr, "bailiff: warning: %s: record %d: %s\n", name, w.Seq, w.Reason)
	}
	if _, err := os.Stat(evidence); err != nil && !opt.IntegrityOnly && name != "-" && rep.Contents > 0 {
		// Not an error: a log may be verified without its evidence, and
		// every decision that needed it is then listed as unevaluable.
		// A CI gate reads the JSON, not stderr: it carries it too.
		why := fmt.Sprintf("no evidence store at %s: every tool output counts as purged", evidence)
		fmt.Fprintf(stderr, "bailiff: warning: %s\n", why)
		rep.Warnings = append(rep.Warnings, verify.Finding{File: name, Kind: verify.WarnNoStore, Reason: why})
	}
	if live {
		// A writer is appending: its last line may simply be unfinished.
		kept := rep.Findings[:0]
		for _, f := range rep.Findings {
			if f.Torn {
				fmt.Fprintf(stderr, "bailiff: warning: %s is being written: its unfinished last line was not checked\n", name)
				continue
			}
			kept = append(kept, f)
		}
		rep.Findings = kept
	}
}
