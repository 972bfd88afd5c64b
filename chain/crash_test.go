package chain

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// crashEnv makes the test binary a writer that appends records to the
// named log for ever, printing each seq once Append returned (the record
// is durable): what the parent may rely on after killing it.
const crashEnv = "BAILIFF_CRASH_WRITER"

func TestMain(m *testing.M) {
	if name := os.Getenv(crashEnv); name != "" {
		crashWriter(name)
		return
	}
	os.Exit(m.Run())
}

func crashWriter(name string) {
	w, err := Open(name, Sync)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	out := bufio.NewWriter(os.Stdout)
	for i := 0; ; i++ {
		// Records of very different sizes, so kills land inside large
		// writes as well as between small ones.
		pad := strings.Repeat("x", (i*7919)%(64<<10))
		rec, err := w.Append(time.Unix(int64(i), 0), "s", KindCall, &testCall{Call: strconv.Itoa(i), Tool: "t",
			Args: map[string]any{"pad": pad}, Digest: "sha256:-", testDecision: testDecision{Verdict: "allow", Check: "rules"}})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		fmt.Fprintln(out, rec.Seq)
		out.Flush()
	}
}

// TestCrashRecovery kills a writer with SIGKILL at random points, 200
// times over the same log, and checks every time that repair leaves a log
// that verifies and still holds every record acknowledged as durable, and
// that writing can go on after it.
func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("kills 200 writer processes")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var name string
	fresh := func(round int) {
		name = filepath.Join(dir, fmt.Sprintf("audit-%d.jsonl", round))
		if err := os.WriteFile(name, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	fresh(0)
	total := int64(0)
	rng := rand.New(rand.NewPCG(1, 2))
	const rounds = 200
	deadline := time.Now().Add(5 * time.Minute)
	acked := int64(-1)
	torn := 0
	for round := 0; round < rounds; round++ {
		if time.Now().After(deadline) {
			t.Fatalf("only %d rounds in the time allowed", round)
		}
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), crashEnv+"="+name)
		stdout, _ := cmd.StdoutPipe()
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Let it acknowledge a random number of records (sometimes none),
		// then kill it wherever it is.
		want := rng.IntN(8)
		sc := bufio.NewScanner(stdout)
		for n := 0; n < want && sc.Scan(); n++ {
			seq, err := strconv.ParseInt(sc.Text(), 10, 64)
			if err != nil {
				t.Fatalf("round %d: writer said %q", round, sc.Text())
			}
			acked = seq
		}
		if d := rng.IntN(3); d > 0 {
			time.Sleep(time.Duration(d) * 100 * time.Microsecond)
		}
		_ = cmd.Process.Signal(syscall.SIGKILL)
		// Seqs acknowledged before the kill landed still count.
		for sc.Scan() {
			if seq, err := strconv.ParseInt(sc.Text(), 10, 64); err == nil {
				acked = seq
			}
		}
		_ = cmd.Wait()
		if strings.TrimSpace(stderr.String()) != "" {
			t.Fatalf("round %d: writer failed: %s", round, stderr.String())
		}

		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		var fixed bytes.Buffer
		done, err := Repair(bytes.NewReader(data), &fixed)
		kept := done.Kept
		if err != nil {
			t.Fatalf("round %d: repair: %v", round, err)
		}
		if done.Cut > 0 || done.Newline {
			torn++
		}
		if kept <= acked {
			t.Fatalf("round %d: %d records survived, but record %d was acknowledged as durable", round, kept, acked)
		}
		sum, err := VerifyIntegrity(bytes.NewReader(fixed.Bytes()))
		if err != nil || sum.Records != kept {
			t.Fatalf("round %d: repaired log does not verify: %v (%d records)", round, err, sum.Records)
		}
		if err := os.WriteFile(name, fixed.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		// Later rounds resume this log; a new one keeps each round's
		// reading short.
		if fixed.Len() > 1<<20 {
			total += acked + 1
			acked = -1
			fresh(round + 1)
		}
	}
	t.Logf("%d rounds, %d left a torn last line, %d records acknowledged", rounds, torn, total+acked+1)
}
