package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"bailiff/audit"
	"bailiff/chain"
	"bailiff/replay"
)

type recordParams struct {
	policy    string
	out       string
	secret    string
	clock     string
	approvers []string
	output    output
}

func newRecord(stdout, stderr io.Writer) *cobra.Command {
	var p recordParams
	c := &cobra.Command{
		Use:   "record --policy POLICY TRACE... -o LOG",
		Short: "Write the audit log the live gateway would have written for session traces",
		Long: `record runs the engine over hand-written session traces, offline, and
writes the audit log the live gateway would have written: a session record
holding the full policy, a call record for every decision, grant, result
and end records, and every output's content in the evidence store beside
the log (LOG.evidence/). The result is deterministic: times come from the
traces, so the same inputs give the same bytes. A trace's events carry
"at" all or none; one with none needs --clock, and its events are at
--clock plus their line number in seconds, counted on across traces. Times
only go forward: traces are given in the order they happened.

It is how a policy is rehearsed end to end, and how audit fixtures are
made. Arguments the policy redacts are left out of the log; their calls
bind grants to an HMAC keyed with --secret (a file of random bytes).
A grant is signed with its approver's key (--approver-key, from keygen
--approver), as the gateway records an out-of-band answer; a grant by
"elicitation" is recorded as answered through the client.`,
		Example: `  bailiff record --policy policy.yaml session.jsonl -o audit.jsonl
  bailiff record --policy policy.yaml --clock 2026-12-01T09:00:00Z untimed.jsonl -o audit.jsonl
  bailiff record --policy policy.yaml --secret deploy.secret traces/*.jsonl -o audit.jsonl
  bailiff verify audit.jsonl`,
		Args: minArgs(1),
		PreRunE: func(cmd *cobra.Command, args []string) error {
			if p.policy == "" {
				return usageErr(errors.New("record needs --policy"), "bailiff record --policy policy.yaml TRACE... -o audit.jsonl")
			}
			if p.out == "" {
				return usageErr(errors.New("record needs -o LOG"), "bailiff record --policy policy.yaml TRACE... -o audit.jsonl")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRecord(cmd.InOrStdin(), stderr, p, args)
		},
	}
	c.Flags().StringVar(&p.policy, "policy", "", "policy file (YAML)")
	c.Flags().StringVarP(&p.out, "output", "o", "", "audit log to write (replaced only with --force)")
	p.output.register(c)
	c.Flags().StringVar(&p.secret, "secret", "", "file holding the key for digests of redacted calls")
	c.Flags().StringArrayVar(&p.approvers, "approver-key", nil, "an approver's private key: the traces' grants by its name are signed with it (repeatable)")
	c.Flags().StringVar(&p.clock, "clock", "", "RFC 3339 time of line 0 for traces with no \"at\" (required for them)")
	return c
}

// untimed reports whether no event of a trace carries a time.
func untimed(events []replay.Event) bool {
	for _, ev := range events {
		if !ev.At.IsZero() {
			return false
		}
	}
	return true
}

func runRecord(stdin io.Reader, stderr io.Writer, p recordParams, traces []string) error {
	rec, err := newRecorder(stdin, p)
	if err != nil {
		return err
	}
	if p.out == "-" {
		return usageErr(errors.New("record writes a log and its evidence store beside it: -o takes a file, not -"), "")
	}
	inputs := append([]string{p.policy, p.secret}, p.approvers...)
	if err := p.output.check(append(inputs, traces...), p.out); err != nil {
		return err
	}
	if chain.InUse(p.out) {
		return usageErr(fmt.Errorf("%s is being written by a running gateway", p.out), "")
	}
	// Two passes over the traces' bytes: parsing, then recording.
	bar := newProgress(stderr, 2*fileSizes(traces), "record")
	defer bar.Done()
	all, err := parseTraces(stdin, p, traces, bar)
	if err != nil {
		return err
	}
	if err := writeRecorded(rec, p, all, bar); err != nil {
		return err
	}
	bar.Done()
	fmt.Fprintf(stderr, "bailiff: recorded %s to %s\n", countOf(int(rec.Log.Next()), "record"), p.out)
	return nil
}

// newRecorder is everything record takes from its flags: the policy, the
// approvers' private keys, the clock and the digest secret.
func newRecorder(stdin io.Reader, p recordParams) (*audit.Recorder, error) {
	pol, err := loadPolicy(stdin, p.policy, nil)
	if err != nil {
		return nil, err
	}
	rec := &audit.Recorder{Policy: pol, Evidence: chain.OpenEvidence(chain.EvidenceDir(p.out))}
	for _, k := range p.approvers {
		skey, err := readPrivateKey(stdin, k)
		if err != nil {
			return nil, err
		}
		if err := wantApproverKey(k, skey); err != nil {
			return nil, err
		}
		if _, err := chain.PublicKey(skey); err != nil {
			return nil, usageErr(fmt.Errorf("%s: %v", k, err), "bailiff keygen --approver NAME makes one")
		}
		if rec.Approvers == nil {
			rec.Approvers = map[string]string{}
		}
		rec.Approvers[chain.KeyName(skey)] = skey
	}
	if p.clock != "" {
		if rec.Epoch, err = time.Parse(time.RFC3339Nano, p.clock); err != nil {
			return nil, usageErr(fmt.Errorf("--clock %q is not an RFC 3339 time", p.clock), "")
		}
	}
	if p.secret != "" {
		if rec.Secret, err = readInput(stdin, p.secret, kindSecret); err != nil {
			return nil, err
		}
		if len(rec.Secret) < 16 {
			return nil, usageErr(fmt.Errorf("secret %s holds %s: a digest key needs at least 16", p.secret, countOf(len(rec.Secret), "byte")), "head -c 32 /dev/urandom > "+p.secret)
		}
	}
	return rec, nil
}

type parsedTrace struct {
	name   string
	events []replay.Event
	size   int
}

// parseTraces reads every trace before anything is written, so a bad one
// leaves no log behind.
func parseTraces(stdin io.Reader, p recordParams, traces []string, bar *progress) ([]parsedTrace, error) {
	var all []parsedTrace
	for _, t := range traces {
		data, err := readInput(stdin, t, kindTrace)
		if err != nil {
			return nil, err
		}
		events, err := replay.ParseTrace(t, bytes.NewReader(data))
		if errors.Is(err, replay.ErrEmptyTrace) {
			return nil, usageErr(fmt.Errorf("%s is empty: no session to record", t), "")
		}
		if err != nil {
			return nil, usageErr(err, "see docs/trace-format.md for the trace format")
		}
		if p.clock == "" && untimed(events) {
			// A log's times are believed: a session stamped from a made-up
			// epoch would read as having happened then.
			return nil, usageErr(fmt.Errorf("%s: no event has \"at\": record does not make up the log's times", t),
				"give each event an \"at\", or --clock TIME for the time of line 0 (events at TIME plus their line in seconds)")
		}
		all = append(all, parsedTrace{t, events, len(data)})
		bar.Add(len(data))
	}
	return all, nil
}

func writeRecorded(rec *audit.Recorder, p recordParams, all []parsedTrace, bar *progress) error {
	// A store this run made goes with a failed run: blobs of a log that
	// was never written would be left for no log. One that was there
	// (--force) is only ever added to, and keeps what it held.
	store := chain.EvidenceDir(p.out)
	_, serr := os.Lstat(store)
	made, recorded := serr != nil, false
	defer func() {
		if made && !recorded {
			os.RemoveAll(store)
		}
	}()
	// The log is written to a temp file and renamed: a failed record
	// leaves no partial log.
	tmp, err := os.CreateTemp(filepath.Dir(p.out), "."+filepath.Base(p.out)+".tmp*")
	if err != nil {
		return usageErr(fmt.Errorf("cannot write %s: %v", p.out, unwrapPath(err)), "")
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	rec.Log = chain.NewWriter(tmp, chain.Batch)
	for _, t := range all {
		bar.Add(t.size)
		if err := rec.Record(t.name, t.events); err != nil {
			return recordError(err, p.out)
		}
	}
	if err := rec.Log.Close(); err != nil {
		return usageErr(fmt.Errorf("cannot write %s: %v", p.out, err), "")
	}
	if err := tmp.Close(); err != nil {
		return usageErr(fmt.Errorf("cannot write %s: %v", p.out, err), "")
	}
	// Link, not rename, unless --force: it fails rather than replace a
	// log that appeared meanwhile. The evidence store is only ever added
	// to, so a replaced log's evidence stays.
	publish := os.Link
	if p.output.force {
		publish = os.Rename
	}
	if err := publish(tmp.Name(), p.out); err != nil {
		return usageErr(fmt.Errorf("cannot write %s: %v", p.out, unwrapPath(err)), "")
	}
	recorded = true
	return nil
}

// recordError tells a trace the recorder refuses from a log it cannot write.
func recordError(err error, out string) error {
	var se *replay.SyntaxError
	if errors.As(err, &se) && se.NeedsKey != "" {
		return usageErr(err, fmt.Sprintf("bailiff keygen --approver %s makes the key; give record its private half with --approver-key", se.NeedsKey))
	}
	if errors.As(err, &se) {
		return usageErr(err, "")
	}
	return usageErr(fmt.Errorf("cannot write %s: %v", out, err), "")
}
