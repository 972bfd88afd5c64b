package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/rogpeppe/go-internal/testscript"

	"bailiff/internal/golden"
	"bailiff/internal/pgtest"
)

func TestMain(tm *testing.M) {
	var m testscript.TestingM = tm
	if os.Getenv(childEnv) == "1" {
		// A test runs the CLI in a process of its own, to measure it.
		os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	// (Not in a script's bailiff, which testscript runs as this binary
	// under that name, with the script's environment.)
	if filepath.Base(os.Args[0]) != "bailiff" && os.Getenv("BAILIFF_STATE_DIR") == "" && os.Getenv("BAILIFF_STATE") == "" {
		// A test that starts a gateway without naming its state must not
		// write the state database of the user running the tests.
		dir, err := os.MkdirTemp("", "bailiff-test-state-")
		if err != nil {
			panic(err)
		}
		os.Setenv("BAILIFF_STATE_DIR", dir)
		m = cleanAfter{m, dir}
	}
	testscript.Main(m, map[string]func(){
		"bailiff": func() { os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) },
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
// Scripts that need PostgreSQL start with [!postgres] skip, and
// BAILIFF_POSTGRES_REQUIRED makes a missing server fail (see pgtest).
func TestScripts(t *testing.T) {
	_, err := os.Stat(filepath.Join(peers, ".bin", "mcp-inspector"))
	havePeers := err == nil
	if !havePeers && os.Getenv("BAILIFF_PEERS_REQUIRED") != "" {
		t.Fatalf("the test peers are not installed in %s", peers)
	}
	havePostgres := os.Getenv("BAILIFF_TEST_POSTGRES") != ""
	if !havePostgres && os.Getenv("BAILIFF_POSTGRES_REQUIRED") != "" {
		t.Fatal("BAILIFF_POSTGRES_REQUIRED is set but BAILIFF_TEST_POSTGRES is not")
	}
	testscript.Run(t, testscript.Params{
		Dir:           "testdata/script",
		UpdateScripts: golden.Updating(),
		Setup: func(e *testscript.Env) error {
			e.Setenv("PEERS", peers)
			// The policies and tool lists a user is pointed at, as shipped.
			fixtures, err := filepath.Abs(filepath.Join("..", "..", "fixtures"))
			if err != nil {
				return err
			}
			e.Setenv("FIXTURES", fixtures)
			// A session needs a principal; run and gateway take $USER.
			e.Setenv("USER", "tester")
			// Scripts that need PostgreSQL ([postgres]) get a schema of
			// their own in $PGSTATE.
			if server := os.Getenv("BAILIFF_TEST_POSTGRES"); server != "" {
				dsn, drop, err := pgtest.NewSchema(server)
				if err != nil {
					return err
				}
				e.Defer(drop)
				e.Setenv("PGSTATE", dsn)
			}
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"jsonrpc-lines": jsonrpcLines,
			"state-ask":     stateAsk,
			"state-sql":     stateSQL,
		},
		Condition: func(cond string) (bool, error) {
			switch cond {
			case "peers":
				return havePeers, nil
			case "postgres":
				return havePostgres, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
	})
}

// jsonrpcLines is the script command "jsonrpc-lines FILE": every line of
// FILE (stdout, for the last command's) is one JSON-RPC message.
func jsonrpcLines(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: jsonrpc-lines FILE")
	}
	lines := strings.Split(strings.TrimSuffix(ts.ReadFile(args[0]), "\n"), "\n")
	for i, l := range lines {
		if _, err := jsonrpc.DecodeMessage([]byte(l)); err != nil {
			ts.Fatalf("line %d of %s is not a JSON-RPC message: %v\n%s", i+1, args[0], err, l)
		}
	}
	if len(lines) == 0 || lines[0] == "" {
		ts.Fatalf("%s holds no messages", args[0])
	}
}

// cleanAfter removes a directory once the tests have run: testscript.Main
// exits, so a deferred call would not.
type cleanAfter struct {
	testscript.TestingM
	dir string
}

func (c cleanAfter) Run() int {
	defer os.RemoveAll(c.dir)
	return c.TestingM.Run()
}
