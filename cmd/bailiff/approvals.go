package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"bailiff/chain"
	"bailiff/proxy"
)

// listed is an ask as approvals shows it: from the audit log.
type listed struct {
	ID       string         `json:"id"`
	Kind     string         `json:"kind,omitempty"`
	Session  string         `json:"session"`
	Server   string         `json:"server"`
	Call     string         `json:"call,omitempty"`
	Tool     string         `json:"tool"`
	Args     map[string]any `json:"args,omitempty"`
	Redacted []string       `json:"redacted,omitempty"`
	Digest   string         `json:"digest"`
	Reason   string         `json:"reason"`
	Asked    string         `json:"asked"`
	// Problem says why the ask cannot be trusted as shown: the pending
	// file disagrees with the log, or the log has no such ask.
	Problem string `json:"problem,omitempty"`
}

// pendingFromLog reads the pending asks and finds each in the audit log.
func pendingFromLog(audit string) ([]proxy.Pending, map[string]proxy.Recorded, error) {
	// A mistyped path or the wrong file must not read as an empty queue.
	if err := checkFile(audit, kindLog); err != nil {
		return nil, nil, err
	}
	a := &proxy.Approvals{Dir: proxy.ApprovalsDir(audit)}
	pending, err := a.List()
	if err != nil {
		return nil, nil, usageErr(fmt.Errorf("cannot read the approvals of %s: %v", audit, err), "")
	}
	if len(pending) == 0 {
		return nil, nil, nil
	}
	f, err := openInput(nil, audit, kindLog) // checkFile refused "-"
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	rec, err := proxy.FromLog(f, pending)
	if err != nil {
		return nil, nil, usageErr(fmt.Errorf("%s: %v", audit, err), "bailiff verify "+audit)
	}
	return pending, rec, nil
}

func newApprovals(stdout io.Writer) *cobra.Command {
	var audit string
	var format formatFlag
	c := &cobra.Command{
		Use:   "approvals --audit LOG",
		Short: "List the calls waiting for a human's approval",
		Long: `approvals lists the asks a running gateway could not put to a human
(the client has no elicitation support): each with its approval id, the
session, the tool, the arguments and why the policy asks, all as the
gateway's audit log records them. The pending files beside the log are
only a notice: where one disagrees with the log, or names an ask the log
does not hold, approvals says so.
Answer one with 'bailiff approve ID' or 'bailiff decline ID'; the agent's
next identical call then goes through (or stays refused).`,
		Example: `  bailiff approvals --audit mail.audit.jsonl
  bailiff approve mail-20261202T101500-1a2b3c4d-c7 --audit mail.audit.jsonl`,
		Args: noArgs(),
		PreRunE: func(cmd *cobra.Command, args []string) error {
			if audit == "" {
				return usageErr(errors.New("approvals needs --audit, the gateway's audit log"), "")
			}
			_, err := format.get()
			return err
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runApprovals(stdout, audit, format)
		},
	}
	c.Flags().StringVar(&audit, "audit", "", "the gateway's audit log")
	format.register(c)
	return c
}

func runApprovals(stdout io.Writer, audit string, format formatFlag) error {
	pending, rec, err := pendingFromLog(audit)
	if err != nil {
		return err
	}
	var out []listed
	for _, p := range pending {
		out = append(out, listPending(p, rec[p.ID]))
	}
	f, _ := format.get()
	if f == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		for _, l := range out {
			if err := enc.Encode(l); err != nil {
				return err
			}
		}
		return nil
	}
	return printApprovals(stdout, out)
}

// listPending shows an ask as the log records it, not as its pending
// file says, and says why it cannot be approved if it cannot.
func listPending(p proxy.Pending, r proxy.Recorded) listed {
	l := listed{ID: p.ID, Kind: p.Kind, Session: p.Session, Server: p.Server, Call: p.Call, Tool: p.Tool}
	switch {
	case !r.Found:
		l.Problem = "the audit log holds no such ask: it cannot be approved"
	default:
		l.Server, l.Tool, l.Digest, l.Reason = r.Approval.Server, r.Approval.Tool, r.Approval.Digest, r.Reason
		l.Args, l.Redacted = r.Args, r.Redacted
		l.Asked = r.Asked.UTC().Format(chain.TimeFormat)
		switch {
		case r.Inconsistent != "":
			l.Problem = "the audit log's record of this ask is inconsistent (" + r.Inconsistent + "): it cannot be approved"
		case r.Differs != "":
			l.Problem = "the pending file disagrees with the audit log (" + r.Differs + "): shown as logged; it cannot be approved"
		case r.Ended:
			l.Problem = "its session has ended: the call can no longer be retried, so an answer would approve nothing"
		}
	}
	return l
}

func printApprovals(stdout io.Writer, out []listed) error {
	if len(out) == 0 {
		_, err := fmt.Fprintln(stdout, "no calls are waiting for approval")
		return err
	}
	for _, l := range out {
		fmt.Fprintln(stdout, l.ID)
		if l.Asked == "" {
			fmt.Fprintf(stdout, "  warning: %s\n", l.Problem)
			continue
		}
		what, _ := json.Marshal(l.Args)
		if l.Kind == "definition" {
			what = []byte("new definition " + l.Digest)
		} else if len(l.Redacted) > 0 {
			what = append(what, []byte(" (redacted: "+strings.Join(l.Redacted, ", ")+")")...)
		}
		fmt.Fprintf(stdout, "  asked %s in session %s\n  %s.%s %s\n  %s\n", l.Asked, l.Session, l.Server, l.Tool, what, l.Reason)
		if l.Problem != "" {
			fmt.Fprintf(stdout, "  warning: %s\n", l.Problem)
		}
	}
	return nil
}
