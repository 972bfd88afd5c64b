package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"bailiff/export"
	"bailiff/verify"
)

type exportParams struct {
	format          string
	out             output
	to              string
	allowUnverified bool
	follow          bool
	// verify holds what the logs are verified against, as for verify:
	// --checkpoint, --key, --approver-key.
	verify verifyParams
}

func newExport(stdout, stderr io.Writer) *cobra.Command {
	p := exportParams{out: output{stdout: stdout}}
	c := &cobra.Command{
		Use:   "export LOG...",
		Short: "Write verified audit records for a SIEM: OpenTelemetry logs, JSON lines or Splunk HEC",
		Long: `export verifies audit logs as verify does (the chain and every recorded
verdict) and writes each record as one event per line:

  otlp        an OTLP/JSON logs request per record, as the OpenTelemetry
              collector's file exporter writes and its otlpjsonfile
              receiver reads
  jsonl       one flat JSON object per record (the default)
  splunk-hec  a Splunk HTTP Event Collector event per record

Every event carries its record's seq, hash and the hash before it, the log
it belongs to (the hash of the log's first record), the record's exact
line, and what was checked ("verified": "full"), with the fields a SIEM
queries (server, tool, verdict, check, rule, …) beside it. Tool arguments
appear only inside the line, as the log recorded them (after redaction).

A log is verified as bailiff verify does, against --checkpoint and --key and
with only the --approver-key keys trusted when they are given. A log with
findings is refused; --allow-unverified exports it anyway and
marks every event "verified": "none". A broken chain is refused always.
Records a gateway appends while export runs are left for the next run.

--follow exports one log and then, as tail -F does, each record appended to
it, checked to be the next link of the chain ("verified": "chain": its
verdict is not recomputed as it arrives; verify --export checks it later).
When the log is renamed away (rotated), the old file is read until its
writer lets go of it, and the new file at the name is verified and followed
from its first record. A record that does not link stops it (exit 1).
SIGINT or SIGTERM ends it after writing every whole record read (exit 0).

bailiff verify --export FILE LOG... checks a copy against the logs: every
event dropped, altered, invented or repeated is named.`,
		Example: `  bailiff export audit.jsonl -o audit.events.ndjson
  bailiff export --format otlp logs/ -o audit.otlp.ndjson
  bailiff export --format splunk-hec audit.jsonl | curl -H "Authorization: Splunk $TOKEN" --data-binary @- https://splunk:8088/services/collector/event
  bailiff export --follow --format otlp audit.jsonl | otel-shipper
  bailiff verify --export audit.events.ndjson audit.jsonl`,
		Args: minArgs(1),
		PreRunE: func(cmd *cobra.Command, args []string) error {
			if p.verify.checkpoint != "" && p.verify.key == "" {
				return usageErr(errors.New("--checkpoint needs --key, the public key it was signed with"), "bailiff export --checkpoint audit.ckpt --key audit.pub audit.jsonl")
			}
			_, err := exportFormat(p.format)
			return err
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runExport(cmd.InOrStdin(), stdout, stderr, p, args)
		},
	}
	c.Flags().StringVar(&p.format, "format", "jsonl", "event format: otlp, jsonl or splunk-hec")
	completeValues(c, "format", "otlp", "jsonl", "splunk-hec")
	c.Flags().StringVarP(&p.to, "output", "o", "-", "file to write (- is standard output)")
	c.Flags().BoolVar(&p.allowUnverified, "allow-unverified", false, `export logs with findings, every event marked "verified": "none"`)
	c.Flags().StringVar(&p.verify.checkpoint, "checkpoint", "", "verify the log against this signed checkpoint, kept elsewhere (one log)")
	c.Flags().StringVar(&p.verify.key, "key", "", "public key file the checkpoints are signed with")
	c.Flags().StringArrayVar(&p.verify.approvers, "approver-key", nil, "trust only these approver public keys (or .pub files), whatever a session record lists (repeatable)")
	c.Flags().BoolVar(&p.follow, "follow", false, "after exporting one log, keep writing what is appended to it, across rotation, until interrupted")
	p.out.register(c)
	return c
}

func exportFormat(s string) (export.Format, error) {
	f, err := export.ParseFormat(s)
	if err != nil {
		return "", usageErr(err, "otlp for an OpenTelemetry collector, splunk-hec for Splunk, jsonl for anything else")
	}
	return f, nil
}

func runExport(stdin io.Reader, stdout, stderr io.Writer, p exportParams, args []string) error {
	defer offlineMemory()()
	f, _ := exportFormat(p.format)
	files, err := logFiles(args)
	if err != nil {
		return err
	}
	if err := exportable(files, p.to); err != nil {
		return err
	}
	opt, err := verifyOptions(stdin, p.verify, files)
	if err != nil {
		return err
	}
	if p.follow {
		if p.verify.checkpoint != "" {
			return usageErr(errors.New("--checkpoint is of one log, and --follow follows whatever log is at the name, across rotation"), "export the checkpointed log without --follow")
		}
		if len(files) != 1 {
			return usageErr(errors.New("--follow follows one log"), "run one export --follow per log")
		}
		return runFollow(stdin, stdout, stderr, p, opt, f, files[0])
	}
	if err := distinctLogs(files, nil); err != nil {
		return err
	}
	if err := p.out.free(p.to); err != nil {
		return err
	}
	bar := newProgress(stderr, fileSizes(files), "verify")
	defer bar.Done()
	reports, err := verifyAll(stdin, stderr, files, "", opt, bar)
	if err != nil {
		return err
	}
	logs, closeAll, err := verifiedLogs(files, reports, p.allowUnverified)
	defer closeAll()
	if err != nil {
		return err
	}
	var n int64
	err = p.out.writeFrom(p.to, func(w io.Writer) error {
		return staged(w, p.to == "-", func(w io.Writer) error {
			_, err := export.Write(w, f, logs)
			for _, l := range logs {
				n += l.Records
			}
			return err
		})
	})
	if err != nil {
		var ee *ExitError
		if errors.As(err, &ee) {
			return err
		}
		return usageErr(err, "nothing was kept; run export again")
	}
	if p.to != "-" {
		fmt.Fprintf(stderr, "bailiff: exported %d records to %s (%s)\n", n, p.to, f)
	}
	return nil
}

// staged runs fill into w, through a temporary file first when w is a
// stream (stage): the check that the log read is the log verified comes
// at its end, and a stream cannot take back what it was given.
func staged(w io.Writer, stage bool, fill func(io.Writer) error) error {
	if !stage {
		return fill(w)
	}
	tmp, err := os.CreateTemp("", "bailiff-export-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	if err := fill(tmp); err != nil {
		return err
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return err
	}
	_, err = io.Copy(w, tmp)
	return err
}

// exportable refuses what export cannot read twice (a log on standard
// input: it is read once to verify and once to export) and an output
// that is one of the logs.
func exportable(files []string, to string) error {
	for _, name := range files {
		if name == "-" {
			return usageErr(errors.New("export reads a log twice, once to verify it and once to export it: give it a file, not standard input"), "")
		}
		if to != "-" && (name == to || sameFile(name, to)) {
			return usageErr(fmt.Errorf("%s is a log export reads: the output must be another file", to), "")
		}
	}
	return nil
}

// verifiedLogs opens the logs again, to be read as far as they were
// verified. A log with findings is refused unless allow; then its events
// say so. A broken chain is refused always: what follows the break is
// not known to be the log at all.
func verifiedLogs(files []string, reports []*verify.Report, allow bool) ([]export.Log, func(), error) {
	return openVerified(files, reports, func(name string, rep *verify.Report) (export.Level, error) { return exportLevel(name, rep, allow) })
}

// openVerified opens the logs again, each to be read as far as it was
// verified, with the level its report gives it.
func openVerified(files []string, reports []*verify.Report, levelOf func(string, *verify.Report) (export.Level, error)) ([]export.Log, func(), error) {
	var opened []*os.File
	closeAll := func() {
		for _, f := range opened {
			f.Close()
		}
	}
	logs := make([]export.Log, len(files))
	for i, rep := range reports {
		level, err := levelOf(files[i], rep)
		if err != nil {
			return nil, closeAll, err
		}
		f, err := os.Open(files[i])
		if err != nil {
			return nil, closeAll, usageErr(fmt.Errorf("cannot read %s: %v", files[i], unwrapPath(err)), "")
		}
		opened = append(opened, f)
		logs[i] = export.Log{Name: files[i], R: f, Level: level, Records: rep.Records, Root: rep.Root}
	}
	return logs, closeAll, nil
}

// exportLevel is what a log's verification lets its events claim: a log
// with findings is refused unless allow, and a broken chain always.
func exportLevel(name string, rep *verify.Report, allow bool) (export.Level, error) {
	level := export.Full
	for _, fd := range rep.Findings {
		if fd.Kind == verify.FindIntegrity {
			return "", findingErr(fmt.Errorf("%s fails integrity at seq %d: %s: export does not read a broken chain", name, fd.Seq, oneLine(fd.Reason)),
				"bailiff verify "+name+" says more; --allow-unverified does not read past an integrity failure")
		}
		level = export.None
	}
	if level != export.Full && !allow {
		return "", findingErr(fmt.Errorf("%s has %s: export writes only verified records", name, countOf(len(rep.Findings), "finding")),
			fmt.Sprintf(`bailiff verify %s names them; --allow-unverified exports it with every event marked "verified": "none"`, name))
	}
	return level, nil
}

// openExported opens the copy verify --export checks: a file of its own,
// read twice (indexed, then compared), and none of the logs.
func openExported(name string, files []string) (*os.File, error) {
	if name == "-" {
		return nil, usageErr(errors.New("--export reads the copy twice: give it a file, not standard input"), "")
	}
	for _, log := range files {
		if log == "-" {
			return nil, usageErr(errors.New("--export reads each log again after verifying it: give the logs as files, not standard input"), "")
		}
		if log == name || sameFile(log, name) {
			return nil, usageErr(fmt.Errorf("%s is one of the logs: --export names the exported copy", name), "")
		}
	}
	if err := notDir(name); err != nil {
		return nil, err
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, usageErr(fmt.Errorf("cannot read %s: %v", name, unwrapPath(err)), "")
	}
	return f, nil
}

// checkExport compares the copy with the logs as verify read them: a log
// with findings supports no event's claim to be verified.
func checkExport(copied *os.File, files []string, reports []*verify.Report) (*export.Result, error) {
	st, err := copied.Stat()
	if err != nil {
		return nil, usageErr(err, "")
	}
	// A log with findings supports no claim; the copy's are compared.
	logs, closeAll, err := openVerified(files, reports, func(_ string, rep *verify.Report) (export.Level, error) {
		if len(rep.Findings) > 0 {
			return export.None, nil
		}
		return export.Full, nil
	})
	defer closeAll()
	if err != nil {
		return nil, err
	}
	res, err := export.Check(copied, st.Size(), logs)
	if err != nil {
		return nil, usageErr(err, "")
	}
	return res, nil
}
