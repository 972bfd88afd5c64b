package main

import (
	"os"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"bailiff/internal/golden"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"bailiff": func() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) },
	})
}

// TestScripts runs the CLI scripts under testdata/script: each is a
// txtar archive of commands, inputs and the exact expected output.
// go test -update rewrites the expected output in place.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:           "testdata/script",
		UpdateScripts: golden.Updating(),
	})
}
