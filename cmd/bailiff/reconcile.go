package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"bailiff/audit"
	"bailiff/proxy"
)

// reconcileState brings the state database in line with the audit log
// before a gateway serves: the gateway writes the log first, so after an
// unclean stop the log may show an approval used that the database still
// holds unused, and a later session would take it up again. The log
// wins: each such approval is marked used, and said on stderr. Only the
// unused approvals of this log are looked for, so a gateway whose
// database holds none reads nothing.
func reconcileState(stderr io.Writer, a *proxy.Approvals) error {
	ids, err := a.Store.Unspent(a.Log)
	if err != nil || len(ids) == 0 {
		return stateErrOrNil(err)
	}
	f, err := os.Open(a.Log)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	var found []struct{ id, by string }
	var decodeErr error
	err = audit.Scan(f, func(h audit.RecordHead, decode func() (*audit.Event, error)) {
		// Only a call some grant allowed is worth decoding.
		if h.Kind != "call" || !bytes.Contains(h.Body, []byte(`"grant":`)) {
			return
		}
		ev, err := decode()
		if err != nil {
			decodeErr = err
			return
		}
		if ev.Call == nil || ev.Call.Body == nil {
			return
		}
		b := ev.Call.Body
		if g := b.Decision.Grant; want[g] && b.Decision.Verdict == "allow" {
			found = append(found, struct{ id, by string }{g, h.Session + "/" + b.Call})
			delete(want, g)
		}
	})
	if err == nil {
		err = decodeErr
	}
	if err != nil {
		return fmt.Errorf("cannot reconcile the state database with %s: %v", a.Log, err)
	}
	for _, u := range found {
		if err := a.Store.Reconcile(u.id, u.by, time.Now()); err != nil {
			return stateErr(err)
		}
		fmt.Fprintf(stderr, "bailiff: reconciled the state database with the audit log: approval %s was used by %s before the gateway stopped\n", u.id, u.by)
	}
	return nil
}

func stateErrOrNil(err error) error {
	if err == nil {
		return nil
	}
	return stateErr(err)
}
