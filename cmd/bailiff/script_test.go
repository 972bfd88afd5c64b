package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"bailiff/internal/golden"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"bailiff": func() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) },
	})
}

// peers is where .ci/run installs the real MCP servers and client the
// proxy scripts drive.
var peers, _ = filepath.Abs("../../proxy/testdata/peers/node_modules")

// TestScripts runs the CLI scripts under testdata/script: each is a
// txtar archive of commands, inputs and the exact expected output.
// go test -update rewrites the expected output in place. Scripts that
// need the real MCP servers start with [!peers] skip; CI sets
// BAILIFF_PEERS_REQUIRED, and then missing peers fail the test instead.
func TestScripts(t *testing.T) {
	_, err := os.Stat(filepath.Join(peers, ".bin", "mcp-inspector"))
	havePeers := err == nil
	if !havePeers && os.Getenv("BAILIFF_PEERS_REQUIRED") != "" {
		t.Fatalf("the test peers are not installed in %s", peers)
	}
	testscript.Run(t, testscript.Params{
		Dir:           "testdata/script",
		UpdateScripts: golden.Updating(),
		Setup: func(e *testscript.Env) error {
			e.Setenv("PEERS", peers)
			return nil
		},
		Condition: func(cond string) (bool, error) {
			if cond == "peers" {
				return havePeers, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
	})
}
