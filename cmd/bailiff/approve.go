package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"bailiff/proxy"
)

func newApprovals(stdout io.Writer) *cobra.Command {
	var audit string
	var format formatFlag
	c := &cobra.Command{
		Use:   "approvals --audit LOG",
		Short: "List the calls waiting for a human's approval",
		Long: `approvals lists the asks a running gateway could not put to a human
(the client has no elicitation support): each with its approval id, the
session, the tool, the arguments as logged, and why the policy asks.
Answer one with 'bailiff approve ID' or 'bailiff decline ID'; the agent's
next identical call then goes through (or stays refused).`,
		Example: `  bailiff approvals --audit mail.audit.jsonl
  bailiff approve mail-20261202T101500-1a2b3c4d-c7 --audit mail.audit.jsonl`,
		Args: cobra.NoArgs,
		PreRunE: func(cmd *cobra.Command, args []string) error {
			if audit == "" {
				return usageErr(errors.New("approvals needs --audit, the gateway's audit log"), "")
			}
			_, err := format.get()
			return err
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			a := &proxy.Approvals{Dir: proxy.ApprovalsDir(audit)}
			pending, err := a.List()
			if err != nil {
				return usageErr(fmt.Errorf("cannot read the approvals of %s: %v", audit, err), "")
			}
			f, _ := format.get()
			if f == "json" {
				enc := json.NewEncoder(stdout)
				enc.SetEscapeHTML(false)
				for _, p := range pending {
					if err := enc.Encode(p); err != nil {
						return err
					}
				}
				return nil
			}
			if len(pending) == 0 {
				_, err := fmt.Fprintln(stdout, "no calls are waiting for approval")
				return err
			}
			for _, p := range pending {
				what, _ := json.Marshal(p.Args)
				if p.Kind == "definition" {
					what = []byte("new definition " + p.Digest)
				}
				fmt.Fprintf(stdout, "%s\n  asked %s in session %s\n  %s.%s %s\n  %s\n", p.ID, p.Asked, p.Session, p.Server, p.Tool, what, p.Reason)
			}
			return nil
		},
	}
	c.Flags().StringVar(&audit, "audit", "", "the gateway's audit log")
	format.register(c)
	return c
}

func newAnswer(stdout io.Writer, answer string) *cobra.Command {
	var audit, as string
	verb := "approve"
	if answer == "decline" {
		verb = "decline"
	}
	c := &cobra.Command{
		Use:   verb + " ID --audit LOG",
		Short: strings.ToUpper(verb[:1]) + verb[1:] + " a call waiting for a human",
		Long: verb + ` answers a pending ask (see 'bailiff approvals'). The gateway writes the
answer to the audit log as a grant, bound to that exact call (tool and
arguments), usable once, before the policy's approval TTL runs out, and
never by the principal who made the call: an approver naming the same
subject is refused when the call is retried.`,
		Example: "  bailiff " + verb + " mail-20261202T101500-1a2b3c4d-c7 --audit mail.audit.jsonl --as lee",
		Args:    cobra.ExactArgs(1),
		PreRunE: func(cmd *cobra.Command, args []string) error {
			if audit == "" {
				return usageErr(errors.New(verb+" needs --audit, the gateway's audit log"), "")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			approver := as
			if approver == "" {
				approver = os.Getenv("USER")
			}
			a := &proxy.Approvals{Dir: proxy.ApprovalsDir(audit)}
			if err := a.Decide(args[0], answer, approver); err != nil {
				return usageErr(err, "bailiff approvals --audit "+audit+" lists the pending ones")
			}
			_, err := fmt.Fprintf(stdout, "%s: %sd by %s; the gateway records it at the next call\n", args[0], verb, approver)
			return err
		},
	}
	c.Flags().StringVar(&audit, "audit", "", "the gateway's audit log")
	c.Flags().StringVar(&as, "as", "", "the approver's name (default $USER)")
	return c
}
