//go:build !unix

package main

import "os"

// sharedDir is unix's check; elsewhere nothing is refused.
func sharedDir(os.FileInfo) string { return "" }

// sharedAncestor is unix's check; elsewhere nothing is refused.
func sharedAncestor(string) (string, error) { return "", nil }
