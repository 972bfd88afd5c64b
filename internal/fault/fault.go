// Package fault lets a test make bailiff fail at a named point, so that
// the recovery around every driver of a session (the live gateway, verify,
// shadow) is exercised by the failure it exists for. In production no
// hook is set and At does nothing.
package fault

import "sync/atomic"

// The points a hook can fail at.
const (
	Decide = "decide" // before the engine decides a call
	Record = "record" // before a call's record is written
)

var hook atomic.Pointer[func(point, detail string)]

// Set installs fn for the rest of the test, until the returned restore is
// called.
func Set(fn func(point, detail string)) (restore func()) {
	old := hook.Swap(&fn)
	return func() { hook.Store(old) }
}

// At runs the hook, if any, at point; detail names what is at stake (a
// tool, a session), so a hook can fail for one call only.
func At(point, detail string) {
	if h := hook.Load(); h != nil {
		(*h)(point, detail)
	}
}

// StateWrite is before a write to the state database: a hook's error
// there stands for the disk refusing it (a full disk, an I/O error).
const StateWrite = "state-write"

var errHook atomic.Pointer[func(point, detail string) error]

// SetErr installs fn, which returns the error a point fails with (nil
// for none), for the rest of the test, until the returned restore is
// called.
func SetErr(fn func(point, detail string) error) (restore func()) {
	old := errHook.Swap(&fn)
	return func() { errHook.Store(old) }
}

// Err is the error the hook gives at point, if any: the caller fails as
// it would on that error from the system.
func Err(point, detail string) error {
	if h := errHook.Load(); h != nil {
		return (*h)(point, detail)
	}
	return nil
}

// Relay is a message bailiff relays to a client on Streamable HTTP: a
// hook's edit there stands for a gateway that changes what it passes on,
// which the conformance run must notice.
const Relay = "relay"

var editHook atomic.Pointer[func(point string, msg []byte) []byte]

// SetEdit installs fn, which returns the bytes a point passes on instead
// of msg (nil: msg unchanged), until the returned restore is called.
func SetEdit(fn func(point string, msg []byte) []byte) (restore func()) {
	old := editHook.Swap(&fn)
	return func() { editHook.Store(old) }
}

// Edit is what the hook makes of the message encode returns at point, or
// nil when no hook is set or it changes nothing; encode runs only under
// a hook, so a gateway without one pays nothing.
func Edit(point string, encode func() []byte) []byte {
	if h := editHook.Load(); h != nil {
		return (*h)(point, encode())
	}
	return nil
}
