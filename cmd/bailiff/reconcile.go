package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

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
	used, err := proxy.GrantUses(f, want)
	if err != nil {
		return fmt.Errorf("cannot reconcile the state database with %s: %v", a.Log, err)
	}
	for _, id := range ids {
		by := used[id]
		if by == "" {
			continue
		}
		if err := a.Store.Reconcile(id, by, time.Now()); err != nil {
			return stateErr(err)
		}
		fmt.Fprintf(stderr, "bailiff: reconciled the state database with the audit log: approval %s was used by %s before the gateway stopped\n", id, by)
	}
	return nil
}
func stateErrOrNil(err error) error {
	if err == nil {
		return nil
	}
	return stateErr(err)
}
