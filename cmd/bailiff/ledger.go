package main

import "bailiff/audit"

// newLedger is the ledger the sessions of one gateway or run process
// share: a tenant's ceiling and the rates count across all of them.
func newLedger() *audit.Ledger { return audit.NewLedger() }
