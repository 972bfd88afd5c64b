package main

import (
	"bailiff/audit"
	"bailiff/proxy"
)

// newLedger is the ledger the sessions of one gateway or run process
// share, kept in the state database so that every process using it (and
// a restarted one) counts a tenant's spending and rates together.
func newLedger(approvals *proxy.Approvals) *audit.Ledger {
	return audit.NewStoredLedger(proxy.Counters{Store: approvals.Store})
}
