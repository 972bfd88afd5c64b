package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"

	"bailiff/bench/largelog"
)

// childEnv makes the test binary run the CLI instead of the tests.
const childEnv = "BAILIFF_TEST_RUN_MAIN"

// TestVerifyLargeSessionMemory verifies one session holding 144 MB of
// tool output in a process of its own and holds its peak RSS (the
// kernel's ru_maxrss of the child) under 100 MB: a session's output must
// not stay in memory, whatever its size. Memory, not time, so it does not
// depend on how busy the machine is. Before the taint index could spill,
// this peaked near 350 MB. -short uses 48 MB of output, which says less.
func TestVerifyLargeSessionMemory(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("ru_maxrss in KiB is how Linux reports it")
	}
	if raceEnabled {
		// The race detector multiplies memory use, and a child started
		// with vfork inherits this process's high-water mark into its
		// ru_maxrss: .ci/run runs this test again without -race, alone.
		t.Skip("memory is measured without -race: go test ./cmd/bailiff -run TestVerifyLargeSessionMemory")
	}
	size := int64(144_000_000)
	if testing.Short() {
		size = 48_000_000
	}
	log := filepath.Join(t.TempDir(), "large.jsonl")
	if err := largelog.Write(log, size); err != nil {
		t.Fatal(err)
	}
	// The last call posts a phrase from the first output: the search for
	// it runs over spilled text and must name that output (seq 2), in the
	// recorded decision that verify then recomputes.
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	last := data[bytes.LastIndex(data, []byte(`"call":"last"`)):]
	if !bytes.Contains(last, []byte(`"verdict":"deny","check":"taint"`)) || !bytes.Contains(last, []byte(`"tainted_by":{"seq":2,`)) {
		t.Fatalf("the planted phrase was not found in the first output: %.300s", last)
	}
	data = nil
	cmd := exec.Command(os.Args[0], "verify", log)
	cmd.Env = append(os.Environ(), childEnv+"=1", "TMPDIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("verify: %v\n%s", err, out)
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		t.Fatal("no rusage for the child")
	}
	peak := ru.Maxrss << 10 // KiB on Linux
	t.Logf("verify of %d MB of output in one session: peak RSS %.1f MB", size/1e6, float64(peak)/1e6)
	if peak >= 100e6 {
		t.Fatalf("verify peaked at %.1f MB RSS on one session of %d MB of output; the bound is 100 MB\n%s", float64(peak)/1e6, size/1e6, out)
	}
}
