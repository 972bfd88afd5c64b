// Command testrun runs the project's tests as go test does and ends with
// what go test leaves unsaid: which tests skipped for want of something
// this machine lacks (the real MCP servers, Chromium) and the command
// that installs it. go test prints nothing of a passing package, so a
// run that skipped every real-server test would otherwise read as a
// full pass.
//
//	go run ./internal/testrun [go test flags] [packages]
//
// It runs go test -json with the arguments given (./... when none names
// a package), prints each package's result line and the output of every
// test that failed, and exits as go test did.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

func main() {
	args := []string{"test", "-json"}
	args = append(args, os.Args[1:]...)
	if !namesPackage(os.Args[1:]) {
		args = append(args, "./...")
	}
	cmd := exec.Command("go", args...)
	cmd.Stderr = os.Stderr
	cmd.Env = raceEnv(os.Environ(), os.Args[1:])
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "testrun:", err)
		os.Exit(2)
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "testrun:", err)
		os.Exit(2)
	}
	r := newRun(os.Stdout)
	if err := r.read(out); err != nil {
		fmt.Fprintln(os.Stderr, "testrun:", err)
	}
	werr := cmd.Wait()
	r.summary()
	if werr != nil {
		if ee, ok := werr.(*exec.ExitError); ok {
			os.Exit(ee.ExitCode())
		}
		fmt.Fprintln(os.Stderr, "testrun:", werr)
		os.Exit(2)
	}
}

// raceEnv is env for a run with the race detector: unless GORACE says
// otherwise, a race-built process that exits waits 10 ms for a report in
// progress on another thread, not the runtime's 1 s. The CLI tests run
// the race-built test binary as bailiff hundreds of times, and the 1 s
// wait at each exit was most of their time (a race found before exit is
// reported when found, and still fails the run).
func raceEnv(env, args []string) []string {
	race := false
	for _, a := range args {
		if a == "-race" || a == "--race" || a == "-race=true" || a == "--race=true" {
			race = true
		}
		if a == "-args" {
			break
		}
	}
	if !race {
		return env
	}
	for i, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GORACE="); ok {
			if strings.Contains(v, "atexit_sleep_ms=") {
				return env
			}
			out := append([]string(nil), env...)
			out[i] = strings.TrimSpace("GORACE=" + v + " " + raceExitSleep)
			return out
		}
	}
	return append(append([]string(nil), env...), "GORACE="+raceExitSleep)
}

const raceExitSleep = "atexit_sleep_ms=10"

// namesPackage tells whether the arguments name a package: an argument
// that is no flag, and no flag's value. Only go test's flags that take a
// separate value are known here; the rest are written -flag=value.
func namesPackage(args []string) bool {
	takesValue := map[string]bool{"-run": true, "-skip": true, "-count": true, "-timeout": true, "-p": true, "-parallel": true,
		"-bench": true, "-benchtime": true, "-cpu": true, "-tags": true, "-fuzz": true, "-fuzztime": true, "-coverprofile": true, "-covermode": true}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-args":
			return false
		case strings.HasPrefix(a, "-"):
			if takesValue[strings.TrimPrefix(a, "-")] || takesValue[a] {
				i++
			}
		default:
			return true
		}
	}
	return false
}

// event is one line of go test -json.
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

// need is something a test skips without, and how to install it.
type need struct {
	what, install string
	signs         []string // text of a skip message that means it
}

// needs are the things the tests skip without, in the order they are
// reported.
var needs = []need{
	{"the real MCP servers", "npm ci --prefix proxy/testdata/peers (Node 20)",
		[]string{"npm ci --prefix proxy/testdata/peers", "test peers are not installed", "node is not installed"}},
	{"Chromium", "apt-get install chromium",
		[]string{"chromium is not installed"}},
	{"a PostgreSQL server", `eval "$(.ci/postgres start)" (it installs Debian's postgresql if need be)`,
		[]string{"no PostgreSQL server"}},
}

// run follows one go test -json stream.
type run struct {
	w       io.Writer
	output  map[string][]string // package and test -> its output so far
	skipped map[string][]string // need -> the tests it skipped
}

func newRun(w io.Writer) *run {
	return &run{w: w, output: map[string][]string{}, skipped: map[string][]string{}}
}

func (r *run) read(in io.Reader) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			// Not an event (go itself writing): shown as it is.
			fmt.Fprintln(r.w, sc.Text())
			continue
		}
		r.event(e)
	}
	return sc.Err()
}

func (r *run) event(e event) {
	key := e.Package + " " + e.Test
	switch {
	case e.Action == "build-output":
		io.WriteString(r.w, e.Output)
	case e.Action == "output" && e.Test == "":
		// A package's own lines: its result, and what its TestMain
		// printed; the bare PASS that precedes "ok" is noise.
		if e.Output != "PASS\n" {
			io.WriteString(r.w, e.Output)
		}
	case e.Action == "output":
		// go test without -v shows a failed test's output without the
		// lines that frame each run.
		if !strings.HasPrefix(e.Output, "=== ") {
			r.output[key] = append(r.output[key], e.Output)
		}
	case e.Action == "fail" && e.Test != "":
		for _, l := range r.output[key] {
			io.WriteString(r.w, l)
		}
		delete(r.output, key)
	case e.Action == "skip" && e.Test != "":
		text := strings.Join(r.output[key], "")
		for _, n := range needs {
			for _, s := range n.signs {
				if strings.Contains(text, s) {
					r.skipped[n.what] = append(r.skipped[n.what], e.Test)
					break
				}
			}
		}
		delete(r.output, key)
	case e.Action == "pass" || e.Action == "skip":
		delete(r.output, key)
	}
}

// summary ends the run with one line per thing the tests skipped
// without.
func (r *run) summary() {
	for _, n := range needs {
		tests := r.skipped[n.what]
		if len(tests) == 0 {
			continue
		}
		shown := tests
		more := ""
		if len(shown) > 5 {
			shown, more = shown[:5], fmt.Sprintf(" and %d more", len(tests)-5)
		}
		noun := "tests"
		if len(tests) == 1 {
			noun = "test"
		}
		fmt.Fprintf(r.w, "SKIPPED %d %s without %s (%s%s): install with %s\n", len(tests), noun, n.what, strings.Join(shown, ", "), more, n.install)
	}
}
