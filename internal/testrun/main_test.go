package main

import (
	"os"
	"strings"
	"testing"
)

// A run where the real servers and Chromium were missing ends with one
// line for each, naming the tests and the command that installs it; a
// failed test's output is shown, a passing one's is not, and a skip for
// another reason names nothing.
func TestSummaryNamesSkips(t *testing.T) {
	stream := `{"Action":"start","Package":"bailiff/proxy"}
{"Action":"run","Package":"bailiff/proxy","Test":"TestRealFilesystem"}
{"Action":"output","Package":"bailiff/proxy","Test":"TestRealFilesystem","Output":"=== RUN   TestRealFilesystem\n"}
{"Action":"output","Package":"bailiff/proxy","Test":"TestRealFilesystem","Output":"    peers_test.go:47: server-filesystem not installed (npm ci --prefix proxy/testdata/peers)\n"}
{"Action":"output","Package":"bailiff/proxy","Test":"TestRealFilesystem","Output":"--- SKIP: TestRealFilesystem (0.00s)\n"}
{"Action":"skip","Package":"bailiff/proxy","Test":"TestRealFilesystem"}
{"Action":"output","Package":"bailiff/proxy","Test":"TestRoots","Output":"    rootpath_test.go:83: node is not installed\n"}
{"Action":"skip","Package":"bailiff/proxy","Test":"TestRoots"}
{"Action":"output","Package":"bailiff/proxy","Test":"TestRace","Output":"    hostile_server_test.go:64: the ghost answer did not win the race\n"}
{"Action":"skip","Package":"bailiff/proxy","Test":"TestRace"}
{"Action":"output","Package":"bailiff/proxy","Test":"TestQuiet","Output":"    quiet_test.go:9: a log line\n"}
{"Action":"pass","Package":"bailiff/proxy","Test":"TestQuiet"}
{"Action":"output","Package":"bailiff/proxy","Output":"PASS\n"}
{"Action":"output","Package":"bailiff/proxy","Output":"ok  \tbailiff/proxy\t1.2s\n"}
{"Action":"pass","Package":"bailiff/proxy"}
{"Action":"output","Package":"bailiff/cmd/bailiff","Test":"TestScripts/gateway","Output":"        > [!peers] skip 'the test peers are not installed'\n"}
{"Action":"skip","Package":"bailiff/cmd/bailiff","Test":"TestScripts/gateway"}
{"Action":"output","Package":"bailiff/cmd/bailiff","Test":"TestPackInChromium","Output":"    report_test.go:412: chromium is not installed\n"}
{"Action":"skip","Package":"bailiff/cmd/bailiff","Test":"TestPackInChromium"}
{"Action":"output","Package":"bailiff/cmd/bailiff","Test":"TestBroken","Output":"=== RUN   TestBroken\n"}
{"Action":"output","Package":"bailiff/cmd/bailiff","Test":"TestBroken","Output":"    x_test.go:3: boom\n"}
{"Action":"output","Package":"bailiff/cmd/bailiff","Test":"TestBroken","Output":"--- FAIL: TestBroken (0.00s)\n"}
{"Action":"fail","Package":"bailiff/cmd/bailiff","Test":"TestBroken"}
{"Action":"output","Package":"bailiff/cmd/bailiff","Output":"FAIL\tbailiff/cmd/bailiff\t3.4s\n"}
{"Action":"fail","Package":"bailiff/cmd/bailiff"}
go: something go itself printed
`
	var b strings.Builder
	r := newRun(&b)
	if err := r.read(strings.NewReader(stream)); err != nil {
		t.Fatal(err)
	}
	r.summary()
	want := "ok  \tbailiff/proxy\t1.2s\n" +
		"    x_test.go:3: boom\n--- FAIL: TestBroken (0.00s)\n" +
		"FAIL\tbailiff/cmd/bailiff\t3.4s\n" +
		"go: something go itself printed\n" +
		"SKIPPED 3 tests without the real MCP servers (TestRealFilesystem, TestRoots, TestScripts/gateway): install with npm ci --prefix proxy/testdata/peers (Node 20)\n" +
		"SKIPPED 1 test without Chromium (TestPackInChromium): install with apt-get install chromium\n"
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}

// Nothing skipped for want of anything: no summary line.
func TestSummaryQuietWhenNothingMissing(t *testing.T) {
	var b strings.Builder
	r := newRun(&b)
	r.read(strings.NewReader(`{"Action":"output","Package":"p","Output":"ok  \tp\t0.1s\n"}` + "\n"))
	r.summary()
	if b.String() != "ok  \tp\t0.1s\n" {
		t.Errorf("got %q", b.String())
	}
}

func TestNamesPackage(t *testing.T) {
	for args, want := range map[string]bool{
		"":                                 false,
		"-race":                            false,
		"-run TestX":                       false,
		"-run TestX ./proxy":               true,
		"./...":                            true,
		"-count=1 -short":                  false,
		"-timeout 20m -race ./cmd/bailiff": true,
	} {
		if got := namesPackage(strings.Fields(args)); got != want {
			t.Errorf("namesPackage(%q) = %v, want %v", args, got, want)
		}
	}
}

// The README's test command is this runner, and CI runs it (with the
// race detector on top): a newcomer's run and CI's are the same tests.
func TestReadmeAndCIRunIt(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	ci, err := os.ReadFile("../../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "\ngo run ./internal/testrun ") {
		t.Error("the README's set-up does not run the tests with go run ./internal/testrun")
	}
	if !strings.Contains(string(ci), "\ngo run ./internal/testrun -race\n") {
		t.Error(".ci/run does not run the README's test command with -race")
	}
}

// A race-built process waits at exit (1 s unless GORACE says otherwise);
// the runner shortens the wait, and leaves a GORACE that sets it alone.
func TestRaceEnv(t *testing.T) {
	for _, c := range []struct {
		env, args string
		want      string // GORACE in the result; "-" for none
	}{
		{"HOME=/h", "-race", "atexit_sleep_ms=10"},
		{"HOME=/h", "-race=true ./proxy", "atexit_sleep_ms=10"},
		{"HOME=/h", "-run TestX", "-"},
		{"HOME=/h", "-args -race", "-"},
		{"GORACE=halt_on_error=1", "-race", "halt_on_error=1 atexit_sleep_ms=10"},
		{"GORACE=atexit_sleep_ms=500", "-race", "atexit_sleep_ms=500"},
	} {
		env := strings.Fields(c.env)
		before := append([]string(nil), env...)
		got := "-"
		for _, kv := range raceEnv(env, strings.Fields(c.args)) {
			if v, ok := strings.CutPrefix(kv, "GORACE="); ok {
				got = v
			}
		}
		if got != c.want {
			t.Errorf("raceEnv(%q, %q): GORACE %q, want %q", c.env, c.args, got, c.want)
		}
		if strings.Join(env, " ") != strings.Join(before, " ") {
			t.Errorf("raceEnv(%q, %q) changed its input", c.env, c.args)
		}
	}
}
