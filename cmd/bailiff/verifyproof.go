package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"bailiff/chain"
)

func newVerifyProof(stdout io.Writer) *cobra.Command {
	var key string
	c := &cobra.Command{
		Use:   "verify-proof BUNDLE --key PUBLIC",
		Short: "Check an evidence bundle made by prove",
		Long: `verify-proof checks a bundle with the log's public key: the checkpoint's
signature, the record's own hash, and its inclusion in the checkpointed
log. It prints the record and exits 0 if all hold, 1 otherwise.`,
		Example: `  bailiff verify-proof record-42.json --key audit.pub`,
		Args:    exactArgs(1),
		PreRunE: func(cmd *cobra.Command, args []string) error {
			if key == "" {
				return usageErr(errors.New("verify-proof needs --key, the log's public key"), "")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			vkey, err := readPublicKey(cmd.InOrStdin(), key)
			if err != nil {
				return err
			}
			if err := wantLogKey(key, vkey); err != nil {
				return err
			}
			data, err := readInput(cmd.InOrStdin(), args[0], kindProof)
			if err != nil {
				return err
			}
			b, err := chain.ParseBundle(data)
			if err != nil {
				return usageErr(fmt.Errorf("%s: %v", args[0], err), "")
			}
			rec, cp, err := chain.VerifyBundle(b, vkey)
			if err != nil {
				hint := ""
				if errors.Is(err, chain.ErrWrongKey) {
					hint = checkpointHint(err)
				}
				return findingErr(fmt.Errorf("%s: %v", args[0], err), hint)
			}
			_, err = fmt.Fprintf(stdout, "ok: record %d (%s, session %q, %s) is in log %s as checkpointed at %d records\n%s\n",
				rec.Seq, rec.Kind, rec.Session, rec.TS.Format(chain.TimeFormat), cp.Origin, cp.Size, b.Record)
			return err
		},
	}
	c.Flags().StringVar(&key, "key", "", "public key file of the log")
	return c
}
