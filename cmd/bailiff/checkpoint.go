package main

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"bailiff/chain"
)

type checkpointParams struct {
	key    string
	out    string
	append bool
	output output
}

func newCheckpoint(stdout, stderr io.Writer) *cobra.Command {
	var p checkpointParams
	c := &cobra.Command{
		Use:   "checkpoint LOG --key PRIVATE",
		Short: "Sign a checkpoint of an audit log, to keep elsewhere",
		Long: `checkpoint checks a log's integrity, computes the Merkle root of all its
records, and signs a checkpoint of it: a note holding the key's name, the
number of records and the root. Kept somewhere the log's writer cannot
reach, it lets verify --checkpoint detect a log cut short or rewritten.

It refuses to sign a log that fails integrity. With --append the
checkpoint is also written into the log as a checkpoint record, stamped
with this host's clock; it is refused if that is earlier than the log's
last record, so the log's time never goes back.`,
		Example: `  bailiff checkpoint audit.jsonl --key audit.key -o audit.ckpt
  bailiff verify --checkpoint audit.ckpt --key audit.pub audit.jsonl`,
		Args: exactArgs(1),
		PreRunE: func(cmd *cobra.Command, args []string) error {
			if p.key == "" {
				return usageErr(errors.New("checkpoint needs --key, the private key"), "bailiff keygen --name NAME -o PREFIX makes one")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCheckpoint(cmd.InOrStdin(), stdout, stderr, p, args[0])
		},
	}
	c.Flags().StringVar(&p.key, "key", "", "private key file (from bailiff keygen)")
	c.Flags().StringVarP(&p.out, "output", "o", "", "write the signed checkpoint here (default stdout)")
	c.Flags().BoolVar(&p.append, "append", false, "also append it to the log as a checkpoint record")
	p.output.register(c)
	return c
}

func runCheckpoint(stdin io.Reader, stdout, stderr io.Writer, p checkpointParams, name string) error {
	if err := p.output.check([]string{name, p.key}, p.out); err != nil {
		return err
	}
	skey, err := readPrivateKey(stdin, p.key)
	if err != nil {
		return err
	}
	if err := wantLogKey(p.key, skey); err != nil {
		return err
	}
	if p.append && name == "-" {
		return usageErr(errors.New("--append writes to the log: it needs the log's file name, not -"), "")
	}
	f, err := openInput(stdin, name, kindLog)
	if err != nil {
		return err
	}
	sum, err := chain.VerifyIntegrity(f)
	f.Close()
	if err != nil {
		return readLogErr(name, err, "a checkpoint is never signed over a broken log: run bailiff verify "+name)
	}
	cp := chain.Checkpoint{Origin: chain.KeyName(skey), Size: sum.Records, Root: sum.Root}
	signed, err := chain.SignCheckpoint(cp, skey)
	if err != nil {
		return usageErr(fmt.Errorf("%s: %v", p.key, err), "")
	}
	if p.append {
		w, err := chain.Open(name, chain.Sync)
		if err != nil {
			return usageErr(fmt.Errorf("cannot append to %s: %v", name, err), "")
		}
		if w.Next() != sum.Records {
			w.Close()
			return usageErr(fmt.Errorf("%s grew while it was checkpointed", name), "run checkpoint again")
		}
		// A checkpoint record belongs to no session; its time is the
		// checkpoint's own, the one clock read here. It must not be
		// earlier than the log's last record (an earlier checkpoint
		// record among them): a log whose time goes back reads as spliced.
		now := time.Now().UTC()
		if last := w.Last(); now.Before(last) {
			w.Close()
			return usageErr(fmt.Errorf("%s: its last record is at %s, after this host's clock (%s): a checkpoint record would go back in time", name, last.Format(chain.TimeFormat), now.Format(chain.TimeFormat)),
				"set the clock right, or checkpoint without --append")
		}
		_, err = w.Append(now, "", chain.KindCheckpoint, &chain.CheckpointBody{Note: string(signed)})
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return usageErr(fmt.Errorf("cannot append to %s: %v", name, err), "")
		}
	}
	if p.out == "" || p.out == "-" {
		_, err = stdout.Write(signed)
		return err
	}
	p.output.stdout = stdout
	if err := p.output.write(p.out, signed); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "bailiff: signed a checkpoint of %s of %s to %s\n", countOf(int(sum.Records), "record"), name, p.out)
	return nil
}
