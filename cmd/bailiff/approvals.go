package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"bailiff/audit"
	"bailiff/chain"
	"bailiff/proxy"
	"bailiff/state"
)

// listed is an ask as approvals shows it: from the audit log.
type listed struct {
	ID       string         `json:"id"`
	Kind     string         `json:"kind,omitempty"`
	Log      string         `json:"log"`
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
	// Note is what the human should know that does not stop an answer.
	Note string `json:"note,omitempty"`
}

// pendingFromState reads the pending asks from the state database (of
// the log audit only, when it is not "") and finds each in its audit
// log. A log that cannot be read is no error for the others: its asks
// are listed as unreadable (unread[log] says why).
func pendingFromState(st *state.Store, audit string) (pending []proxy.Pending, rec map[string]proxy.Recorded, unread map[string]string, err error) {
	a := &proxy.Approvals{Store: st}
	if audit != "" {
		// A mistyped path or the wrong file must not read as an empty queue.
		if err := checkFile(audit, kindLog); err != nil {
			return nil, nil, nil, err
		}
		if a.Log, err = filepath.Abs(audit); err != nil {
			return nil, nil, nil, err
		}
	}
	pending, err = a.List()
	if err != nil {
		return nil, nil, nil, usageErr(fmt.Errorf("cannot read the pending asks of %s: %v", st.Path(), err), "")
	}
	byLog := map[string][]proxy.Pending{}
	for _, p := range pending {
		byLog[p.Log] = append(byLog[p.Log], p)
	}
	rec, unread = map[string]proxy.Recorded{}, map[string]string{}
	for log, ps := range byLog {
		found, err := recordedIn(log, ps)
		if err != nil {
			unread[log] = err.Error()
			continue
		}
		maps.Copy(rec, found)
	}
	return pending, rec, unread, nil
}

// recordedIn finds the asks ps in the audit log at log.
func recordedIn(log string, ps []proxy.Pending) (map[string]proxy.Recorded, error) {
	if err := checkFile(log, kindLog); err != nil {
		return nil, err
	}
	f, err := openInput(nil, log, kindLog) // checkFile refused "-"
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rec, err := proxy.FromLog(f, ps)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", log, err)
	}
	return rec, nil
}

func newApprovals(stdout io.Writer) *cobra.Command {
	var audit, statePath string
	var format formatFlag
	c := &cobra.Command{
		Use:   "approvals [--state DB] [--audit LOG]",
		Short: "List the calls waiting for a human's approval",
		Long: `approvals lists the asks a running gateway could not put to a human
(the client has no elicitation support), from the state database the
gateway and approve share (--state): each with its approval id, the
session, the tool, the arguments and why the policy asks, all as the
gateway's audit log records them; --audit shows one log's only. The
database is only a notice: where it disagrees with the log, or names an
ask the log does not hold, approvals says so.
Answer one with 'bailiff approve ID' or 'bailiff decline ID'; the agent's
next identical call then goes through (or stays refused).`,
		Example: `  bailiff approvals
  bailiff approve mail-20261202T101500-1a2b3c4d-c7`,
		Args: noArgs(),
		PreRunE: func(cmd *cobra.Command, args []string) error {
			_, err := format.get()
			return err
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runApprovals(stdout, statePath, audit, format)
		},
	}
	c.Flags().StringVar(&audit, "audit", "", "show the asks of this audit log only")
	c.Flags().StringVar(&statePath, "state", "", stateFlagHelp)
	format.register(c)
	return c
}

func runApprovals(stdout io.Writer, statePath, audit string, format formatFlag) error {
	st, err := openStateForAnswers(statePath)
	if err != nil {
		return err
	}
	defer st.Close()
	pending, rec, unread, err := pendingFromState(st, audit)
	if err != nil {
		return err
	}
	var out []listed
	for _, p := range pending {
		l := listPending(p, rec[p.ID])
		if why, ok := unread[p.Log]; ok {
			l.Problem = "its audit log cannot be read (" + why + "): it cannot be approved"
		}
		out = append(out, l)
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
	l := listed{ID: p.ID, Kind: p.Kind, Log: p.Log, Session: p.Session, Server: p.Server, Call: p.Call, Tool: p.Tool}
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
			l.Problem = "the state database disagrees with the audit log (" + r.Differs + "): shown as logged; it cannot be approved"
		case r.Ended && p.Kind == audit.ApproveDefinition:
			l.Problem = "its session has ended: a new session pins the tools as they are then, so accepting this definition would change nothing"
		case r.Ended:
			l.Note = "its session has ended: an approval is taken up by the next session for " + r.Principal + " on this log"
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
		fmt.Fprintf(stdout, "  asked %s in session %s of %s\n  %s.%s %s\n  %s\n", l.Asked, l.Session, l.Log, l.Server, l.Tool, what, l.Reason)
		if l.Problem != "" {
			fmt.Fprintf(stdout, "  warning: %s\n", l.Problem)
		}
		if l.Note != "" {
			fmt.Fprintf(stdout, "  note: %s\n", l.Note)
		}
	}
	return nil
}
