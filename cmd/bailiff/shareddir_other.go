//go:build !unix

package main

import "os"

// sharedDir is unix's check; elsewhere nothing is refused.
func sharedDir(os.FileInfo) string { return "" }
