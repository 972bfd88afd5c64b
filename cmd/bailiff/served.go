package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"bailiff/engine"
)

// errDenyAll is a policy that would deny every call to a server it is
// about to guard.
var errDenyAll = errors.New("the policy has no rule that allows or asks for a server it guards")

// unservedError names the servers a policy would deny every call to.
type unservedError struct {
	policy  string
	servers []string
}

func (e *unservedError) Error() string {
	verb := "has no rule for server"
	if len(e.servers) > 1 {
		verb = "has no rule for servers"
	}
	return fmt.Sprintf("policy %s %s %s: every call will be denied", e.policy, verb, strings.Join(e.servers, ", "))
}

func (e *unservedError) Unwrap() error { return errDenyAll }

// checkServed refuses to guard a server the policy has no allow or ask
// rule for, unless allowed: a name that differs from the policy's by one
// letter would otherwise deny every call, and the agent would see an
// empty tool list with no word why. Allowed, it still says so. A missing
// policy (name "") is a deny-all the caller has already warned of.
func checkServed(stderr io.Writer, pol *engine.Policy, name string, servers []string, allow bool, how servedHow) error {
	if name == "" {
		return nil
	}
	missing := unserved(pol, servers)
	if missing == nil {
		return nil
	}
	err := &unservedError{policy: name, servers: missing}
	if allow {
		fmt.Fprintf(stderr, "bailiff: warning: %v (starting anyway: %s)\n", err, how.given)
		return nil
	}
	return usageErr(err, servedHint(pol, how))
}

// servedHow says, for one command, where a server's name is set and how
// to start anyway.
type servedHow struct {
	rename string // where the server's name is set
	allow  string // what starts anyway, as an instruction
	given  string // and as the setting that did
}

// servedHint says which names the policy does serve, and how to go on.
func servedHint(pol *engine.Policy, how servedHow) string {
	globs := pol.ServerGlobs()
	if len(globs) == 0 {
		return fmt.Sprintf("the policy allows and asks for nothing; to start anyway, %s", how.allow)
	}
	return fmt.Sprintf("its rules allow or ask for server %s: name the server so (%s), or to start anyway, %s", strings.Join(globs, ", "), how.rename, how.allow)
}

// unserved are the servers the policy has no allow or ask rule for.
func unserved(pol *engine.Policy, servers []string) []string {
	var out []string
	for _, s := range servers {
		if !pol.Serves(s) {
			out = append(out, s)
		}
	}
	return out
}
