package state_test

import (
	"bufio"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"bailiff/state"
)

// TestKillNineLosesNothing: a child writes asks, answers, grants and
// uses of them, saying each once the store has returned; it is killed
// with SIGKILL at a random point. Reopened, the database holds every
// write the child was told had happened, no grant is used twice, and a
// grant not used yet is usable exactly once.
func TestKillNineLosesNothing(t *testing.T) {
	if p := os.Getenv("BAILIFF_STATE_CRASH"); p != "" {
		crashChild(p)
		return
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	runs := 30
	if testing.Short() {
		runs = 5
	}
	for run := range runs {
		path := filepath.Join(t.TempDir(), "state.db")
		cmd := exec.Command(exe, "-test.run=^TestKillNineLosesNothing$")
		cmd.Env = append(os.Environ(), "BAILIFF_STATE_CRASH="+path)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		stop := 1 + rand.IntN(120)
		acked := map[string]bool{}
		sc := bufio.NewScanner(out)
		for n := 0; n < stop && sc.Scan(); n++ {
			acked[sc.Text()] = true
		}
		cmd.Process.Kill()
		cmd.Wait()
		checkAfterCrash(t, run, path, acked)
	}
}

func crashChild(path string) {
	s, err := state.Open(path)
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(1)
	}
	for i := 0; ; i++ {
		id := "a" + strconv.Itoa(i)
		g := &state.Grant{Server: "mail", Tool: "send", Digest: "sha256:" + id, Approver: "lee", Approve: true, Expires: t0.Add(time.Hour), Granted: t0}
		steps := []struct {
			name string
			do   func() error
		}{
			{"asked", func() error { return s.AddAsk(ask(id)) }},
			{"answered", func() error { return s.AddAnswer(id, answer("approve")) }},
			{"granted", func() error { return s.Settle(id, t0, g) }},
			{"used", func() error { return s.UseGrant(id, "call-"+id, t0) }},
		}
		for _, st := range steps {
			if err := st.do(); err != nil {
				fmt.Println("error:", err)
				os.Exit(1)
			}
			fmt.Println(st.name, id)
		}
	}
}

func checkAfterCrash(t *testing.T, run int, path string, acked map[string]bool) {
	t.Helper()
	s := open(t, path)
	for line := range acked {
		step, id, _ := strings.Cut(line, " ")
		var lost bool
		switch step {
		case "asked":
			_, ok, err := s.GetAsk(id)
			lost = err != nil || !ok
		case "answered":
			_, ok, err := s.GetAnswer(id)
			lost = err != nil || !ok
		case "granted":
			g, ok, err := s.GetGrant(id)
			lost = err != nil || !ok || !g.Approve
		case "used":
			g, ok, err := s.GetGrant(id)
			lost = err != nil || !ok || g.UsedBy != "call-"+id
		default:
			t.Fatalf("run %d: the child said %q", run, line)
		}
		if lost {
			t.Fatalf("run %d: %q was acknowledged and is lost", run, line)
		}
	}
	// Every grant: used by its own call, or usable now exactly once.
	for i := 0; ; i++ {
		id := "a" + strconv.Itoa(i)
		g, ok, err := s.GetGrant(id)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		if !g.Used.IsZero() {
			if err := s.UseGrant(id, "again", t0); !errors.Is(err, state.ErrUsed) {
				t.Fatalf("run %d: used grant %s was usable again: %v", run, id, err)
			}
			continue
		}
		if err := s.UseGrant(id, "after", t0); err != nil {
			t.Fatalf("run %d: unused grant %s: %v", run, id, err)
		}
		if err := s.UseGrant(id, "after2", t0); !errors.Is(err, state.ErrUsed) {
			t.Fatalf("run %d: grant %s used twice after the crash: %v", run, id, err)
		}
	}
}
