package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"bailiff/audit"
	"bailiff/chain"
	"bailiff/proxy"
	"bailiff/state"
)

// approverDir is where keygen --approver puts approver keys and where
// approve looks for one: the user's config directory, out of the
// project's (and so the agent's) reach. BAILIFF_APPROVER_DIR overrides
// it (tests).
func approverDir() (string, error) {
	if d := os.Getenv("BAILIFF_APPROVER_DIR"); d != "" {
		return d, nil
	}
	d, err := os.UserConfigDir()
	if err != nil {
		return "", usageErr(fmt.Errorf("no user config directory for approver keys: %v", err), "set BAILIFF_APPROVER_DIR")
	}
	return filepath.Join(d, "bailiff", "approvers"), nil
}

// approverKey finds the private key approve signs with: --key, else
// $BAILIFF_APPROVER_KEY, else the one key in the approver directory.
func approverKey(stdin io.Reader, flag string) (string, error) {
	if flag == "" {
		flag = os.Getenv("BAILIFF_APPROVER_KEY")
	}
	if flag == "" {
		dir, err := approverDir()
		if err != nil {
			return "", err
		}
		keys, _ := filepath.Glob(filepath.Join(dir, "*.key"))
		switch len(keys) {
		case 0:
			return "", usageErr(fmt.Errorf("no approver key given (--key or $BAILIFF_APPROVER_KEY), and none in %s", dir),
				"give your approver key with --key FILE.key, or make one with bailiff keygen --approver NAME")
		case 1:
			flag = keys[0]
		default:
			return "", usageErr(fmt.Errorf("%d approver keys in %s: say which with --key", len(keys), dir), "")
		}
	}
	key, err := readPrivateKey(stdin, flag)
	if err != nil {
		return "", err
	}
	return key, wantApproverKey(flag, key)
}

func newAnswer(stdout io.Writer, answer string) *cobra.Command {
	var audit, statePath, key, as string
	verb := "approve"
	if answer == "decline" {
		verb = "decline"
	}
	c := &cobra.Command{
		Use:   verb + " ID [--state DB] [--key PRIVATE]",
		Short: strings.ToUpper(verb[:1]) + verb[1:] + " a call waiting for a human",
		Long: verb + ` answers a pending ask (see 'bailiff approvals'), signed with an
approver key (from 'bailiff keygen --approver NAME'): --key, else
$BAILIFF_APPROVER_KEY, else the one key in the user's approver directory.
The approver is the key's name. What is signed is the ask as the audit
log records it (session, server, tool, the digest of the arguments or of
the new definition), the answer and the time, so the answer fits that
ask only. The answer goes to the state database the gateway shares
(--state); the running gateway takes it at the session's next call, only
if it was started with the key's public half (--approver-key) and never
from the session's principal, and writes it to the audit log as a grant
bound to that exact call. An approval is usable once, until the policy's
approval TTL (counted from its signing) runs out; if the asking session
has ended (the gateway restarted, the client came back), the next
session for the same principal on the same log takes it up.`,
		Example: "  bailiff " + verb + " mail-20261202T101500-1a2b3c4d-c7",
		Args:    exactArgs(1),
		PreRunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("as") {
				return usageErr(errors.New("--as is gone: the approver is the name of the key that signs the answer"), "bailiff keygen --approver NAME makes a key")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAnswer(cmd.InOrStdin(), stdout, answer, verb, statePath, audit, key, args[0])
		},
	}
	c.Flags().StringVar(&audit, "audit", "", "the audit log the ask must be in (default: the one the state database names)")
	c.Flags().StringVar(&statePath, "state", "", stateFlagHelp)
	c.Flags().StringVar(&key, "key", "", "the approver's private key (default $BAILIFF_APPROVER_KEY, else the one in the approver directory)")
	c.Flags().StringVar(&as, "as", "", "refused: the approver is the key's name")
	_ = c.Flags().MarkHidden("as")
	return c
}

func runAnswer(stdin io.Reader, stdout io.Writer, answer, verb, statePath, audit, key, id string) error {
	hint := "bailiff approvals lists the pending ones"
	if audit != "" {
		if err := checkFile(audit, kindLog); err != nil {
			return err
		}
	}
	st, err := openStateForAnswers(statePath)
	if err != nil {
		return err
	}
	defer st.Close()
	skey, err := approverKey(stdin, key)
	if err != nil {
		return err
	}
	r, log, err := answerable(st, audit, id, hint)
	if err != nil {
		return err
	}
	name := chain.KeyName(skey)
	if name == r.Principal {
		return usageErr(fmt.Errorf("%s is the session's principal, who never approves their own agent's calls", name), "")
	}
	// What is signed must be what the human read: an ask whose logged
	// digest is not its logged arguments', or whose record in the state
	// database says otherwise than the log, was edited by someone other
	// than the gateway, and is refused either way.
	if err := r.Signable(); err != nil {
		return usageErr(fmt.Errorf("will not %s %s: %v", verb, id, err), "bailiff verify "+log+" checks the log")
	}
	ap := r.Approval
	// An answer the gateway will refuse approves nothing: written, it
	// would read as done.
	if pub, err := chain.PublicKey(skey); err == nil && !slices.Contains(r.Approvers, pub) {
		return usageErr(fmt.Errorf("session %s does not trust %s's key: the gateway would refuse the answer", ap.Session, name),
			"the gateway trusts the keys given with --approver-key (or approver_keys) when the session starts")
	}
	ap.Answer = answer
	ap.Time = time.Now().UTC().Format(chain.TimeFormat)
	a := &proxy.Approvals{Store: st}
	if _, err := a.Decide(ap, skey); err != nil {
		var refused *state.Refusal
		if errors.As(err, &refused) {
			return usageErr(err, hint)
		}
		return stateErr(err)
	}
	next := "the gateway records it at the session's next call (any session for " + r.Principal + " on this log may take it up, once)"
	switch {
	case r.Ended && answer == "approve":
		next = "its session has ended: the next session for " + r.Principal + " on this log takes it up"
	case r.Ended:
		next = "its session has ended, so no call waits for it: the ask is closed"
	}
	_, err = fmt.Fprintf(stdout, "%s: %sd by %s; %s\n", id, verb, name, next)
	return err
}

// answerable finds the ask id names in the state database and in the
// audit log that records it (which must be audit, when given), refusing
// one that is answered, was not recorded by the gateway, or can no longer
// be retried.
func answerable(st *state.Store, auditLog, id, hint string) (proxy.Recorded, string, error) {
	ask, found, err := st.GetAsk(id)
	if err != nil {
		return proxy.Recorded{}, "", stateErr(err)
	}
	if !found {
		return proxy.Recorded{}, "", usageErr(fmt.Errorf("no pending approval %q", id), hint)
	}
	if _, answered, err := st.GetAnswer(id); err != nil || answered || !ask.Settled.IsZero() {
		if err != nil {
			return proxy.Recorded{}, "", stateErr(err)
		}
		return proxy.Recorded{}, "", usageErr(fmt.Errorf("approval %q is already answered", id), hint)
	}
	if auditLog != "" {
		abs, err := filepath.Abs(auditLog)
		if err != nil {
			return proxy.Recorded{}, "", err
		}
		if abs != ask.Log {
			return proxy.Recorded{}, "", usageErr(fmt.Errorf("approval %q was asked in the audit log %s, not in %s", id, ask.Log, abs), "")
		}
	}
	pending, err := (&proxy.Approvals{Store: st}).List()
	if err != nil {
		return proxy.Recorded{}, "", stateErr(err)
	}
	i := slices.IndexFunc(pending, func(p proxy.Pending) bool { return p.ID == id })
	if i < 0 {
		return proxy.Recorded{}, "", usageErr(fmt.Errorf("approval %q is already answered", id), hint)
	}
	rec, err := recordedIn(ask.Log, pending[i:i+1])
	if err != nil {
		return proxy.Recorded{}, "", usageErr(fmt.Errorf("cannot read the audit log of %s: %v", id, err), "")
	}
	r := rec[id]
	if r.Ended && pending[i].Kind == audit.ApproveDefinition {
		return proxy.Recorded{}, "", usageErr(fmt.Errorf("the session of %s has ended: a new session pins the tools as they are then, so accepting this definition would change nothing", id), "")
	}
	if !r.Found {
		return proxy.Recorded{}, "", usageErr(fmt.Errorf("the audit log %s holds no ask %q: the state database's ask was not recorded by the gateway", ask.Log, id), "")
	}
	return r, ask.Log, nil
}
