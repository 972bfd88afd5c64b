package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"bailiff/chain"
)

type proveParams struct {
	checkpoint string
	out        string
	output     output
}

func newProve(stdout, stderr io.Writer) *cobra.Command {
	var p proveParams
	c := &cobra.Command{
		Use:   "prove LOG SEQ --checkpoint CHECKPOINT",
		Short: "Make a self-contained proof that one record is in a checkpointed log",
		Long: `prove writes an evidence bundle (JSON) for record SEQ: the record's line,
its Merkle inclusion proof, and the signed checkpoint it is proved against.
Anyone with the log's public key can check it with verify-proof, without
the log: hand it to a reviewer who needs one decision, not the whole file.`,
		Example: `  bailiff prove audit.jsonl 42 --checkpoint audit.ckpt -o record-42.json
  bailiff verify-proof record-42.json --key audit.pub`,
		Args: exactArgs(2),
		PreRunE: func(cmd *cobra.Command, args []string) error {
			if p.checkpoint == "" {
				return usageErr(errors.New("prove needs --checkpoint"), "bailiff checkpoint LOG --key PRIVATE -o CHECKPOINT makes one")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runProve(cmd.InOrStdin(), stdout, stderr, p, args[0], args[1])
		},
	}
	c.Flags().StringVar(&p.checkpoint, "checkpoint", "", "signed checkpoint to prove against")
	c.Flags().StringVarP(&p.out, "output", "o", "", "write the bundle here (default stdout)")
	p.output.register(c)
	return c
}

func runProve(stdin io.Reader, stdout, stderr io.Writer, p proveParams, name, seqArg string) error {
	seq, err := strconv.ParseInt(seqArg, 10, 64)
	if err != nil || seq < 0 {
		hint := "SEQ is a record number of 0 or more: bailiff prove LOG SEQ"
		if _, nerr := strconv.ParseInt(name, 10, 64); nerr == nil {
			// The two arguments given the other way round.
			hint = fmt.Sprintf("the log comes first: bailiff prove %s %s", seqArg, name)
		}
		return usageErr(fmt.Errorf("SEQ %q is not a record number", seqArg), hint)
	}
	signed, err := readInput(stdin, p.checkpoint, kindCheckpoint)
	if err != nil {
		return err
	}
	// The signature is checked by whoever receives the bundle; here the
	// checkpoint only has to describe this log.
	text, _, _ := strings.Cut(string(signed), "\n\n")
	cp, err := chain.ParseCheckpoint([]byte(text + "\n"))
	if err != nil {
		return usageErr(fmt.Errorf("%s: %v", p.checkpoint, err), "")
	}
	if p.out != "-" {
		if err := p.output.check([]string{name, p.checkpoint}, p.out); err != nil {
			return err
		}
	}
	f, err := openInput(stdin, name, kindLog)
	if err != nil {
		return err
	}
	tree, recs, err := chain.ReadTree(f)
	f.Close()
	if err != nil {
		return readLogErr(name, err, "run bailiff verify "+name)
	}
	if seq >= tree.Size() && seq >= cp.Size {
		// No checkpoint can cover a record the log does not hold.
		return usageErr(fmt.Errorf("%s holds records 0 to %d: there is no record %d", name, tree.Size()-1, seq), "")
	}
	if seq >= cp.Size {
		return usageErr(fmt.Errorf("record %d is not covered by the checkpoint, which signs records 0 to %d", seq, cp.Size-1), "sign a newer checkpoint: bailiff checkpoint "+name+" --key PRIVATE")
	}
	if cp.Size > tree.Size() {
		return findingErr(fmt.Errorf("%s has %s but the checkpoint signs %d: the log was truncated", name, countOf(int(tree.Size()), "record"), cp.Size), "")
	}
	b, err := tree.NewBundle(recs[seq], signed, cp)
	if err != nil {
		return findingErr(fmt.Errorf("%s: %v", name, err), "")
	}
	data, _ := json.MarshalIndent(b, "", "  ")
	data = append(data, '\n')
	if p.out == "" || p.out == "-" {
		_, err = stdout.Write(data)
		return err
	}
	p.output.stdout = stdout
	if err := p.output.write(p.out, data); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "bailiff: wrote the proof of record %d to %s\n", seq, p.out)
	return nil
}

// checkpointHint is the next step after a checkpoint that does not open.
func checkpointHint(err error) string {
	if errors.Is(err, chain.ErrWrongKey) {
		return "--key takes the public key of the checkpoint's signer, named above; a checkpoint signed by another key proves nothing"
	}
	return "a checkpoint that does not verify proves nothing about the log"
}
