package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode"

	"bailiff/internal/clientconfig"
	"bailiff/proxy"
	"bailiff/state"
)

// stateFlagHelp is the --state flag's help, the same on every command.
const stateFlagHelp = "the state database, where asks wait for an answer (default $BAILIFF_STATE, else state.db in the user's state directory)"

// statePath is the state database named (by --state or state:), else
// $BAILIFF_STATE, else state.db in the user's state directory, made
// absolute: the gateway and approve, run from anywhere, must name the
// same file. A postgres:// URL names a PostgreSQL database, as it is.
func statePath(named string) (path string, isDefault bool, err error) {
	if named == "" {
		named = os.Getenv("BAILIFF_STATE")
	}
	if state.IsPostgres(named) {
		return named, false, nil
	}
	if named == "" {
		named, isDefault = filepath.Join(stateDir(), "state.db"), true
	}
	if named == "-" {
		return "", false, usageErr(errors.New("the state database cannot be -: it is a file bailiff writes"), "")
	}
	path, err = filepath.Abs(named)
	return path, isDefault, err
}

// stateDBGuarded are the state database's files: anyone who can write
// them can record an answer (which still needs a trusted signature to
// count) or destroy the asks waiting there.
func stateDBGuarded(path string) []guarded {
	if state.IsPostgres(path) {
		return nil // no file of it is on this machine
	}
	what, harm := "the state database "+path, "an agent could destroy the asks waiting there and the record of which approvals were used"
	// The counters' lock file too: one removed while held would let two
	// gateways spend a tenant's ceiling at once.
	return []guarded{{what, path, harm}, {what, path + "-wal", harm}, {what, path + "-shm", harm},
		{"the tenant counters' lock " + path + "-counters", path + "-counters", "two gateways could spend a tenant's ceiling at once"}}
}

// openGatewayState opens the state database of run or gateway, after
// refusing one a served tool could write, and reconciles it with the
// audit log. The approvals it returns record their asks as being in the
// audit log audit.
func openGatewayState(stderr io.Writer, named, audit string, roots []clientconfig.Writable) (*proxy.Approvals, []guarded, func(), error) {
	path, isDefault, err := statePath(named)
	if err != nil {
		return nil, nil, nil, err
	}
	if state.IsPostgres(path) && state.HasPassword(path) {
		fmt.Fprintln(stderr, "bailiff: warning: the state URL holds a password: whoever reads the config, or the process list for --state, reads it too; put it in PGPASSWORD or ~/.pgpass")
	}
	guard := stateDBGuarded(path)
	if err := checkOutside(guard, roots); err != nil {
		return nil, nil, nil, err
	}
	st, err := state.Open(path)
	if err != nil {
		return nil, nil, nil, stateErr(err)
	}
	log, err := filepath.Abs(audit)
	if err != nil {
		st.Close()
		return nil, nil, nil, err
	}
	a := &proxy.Approvals{Store: st, Log: log}
	if !isDefault {
		a.StateArg = st.Path() // a PostgreSQL URL without its password: it is shown to the agent
	}
	if err := reconcileState(stderr, a); err != nil {
		st.Close()
		return nil, nil, nil, err
	}
	return a, guard, func() { st.Close() }, nil
}

// openStateForAnswers opens the state database approvals, approve and
// decline read: one that does not exist is refused, not created empty,
// so a mistyped --state never reads as "nothing is waiting".
func openStateForAnswers(named string) (*state.Store, error) {
	path, _, err := statePath(named)
	if err != nil {
		return nil, err
	}
	hint := "name the one the gateway uses with --state (or $BAILIFF_STATE); the gateway says which at its start"
	if state.IsPostgres(path) {
		st, err := state.OpenExisting(path)
		if errors.Is(err, state.ErrNoState) {
			return nil, usageErr(err, hint)
		}
		if err != nil {
			return nil, stateErr(err)
		}
		return st, nil
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, usageErr(fmt.Errorf("no state database at %s: %v", path, errors.Unwrap(err)), hint)
	}
	if fi.Mode().IsRegular() && fi.Size() == 0 {
		// An empty file is no gateway's database yet: reading it must
		// not make it one.
		return nil, usageErr(fmt.Errorf("no state database at %s: the file is empty", path), hint)
	}
	st, err := state.Open(path)
	if err != nil {
		return nil, stateErr(err)
	}
	return st, nil
}

// stateErr is how a state database that cannot be used ends a command:
// it names the file and what to do, and nothing is changed.
func stateErr(err error) error {
	var hint string
	if errors.Is(err, state.ErrCorrupt) {
		hint = "nothing is lost from the evidence: the audit log holds every answer a gateway took"
	}
	return usageErr(err, hint)
}

// replicaName is the name a gateway writes in its session records: the
// one configured, else, on a PostgreSQL state database that replicas may
// share, HOST:PID; on SQLite none.
func replicaName(named string, st *state.Store) (string, error) {
	if named == "" {
		return defaultReplica(st), nil
	}
	if len(named) > 128 || strings.IndexFunc(named, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
		return "", fmt.Errorf("replica %q: a name of at most 128 printable characters", named)
	}
	return named, nil
}

func defaultReplica(st *state.Store) string {
	if !st.Postgres() {
		return ""
	}
	host, _ := os.Hostname()
	return fmt.Sprintf("%s:%d", host, os.Getpid())
}
