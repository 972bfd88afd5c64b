package main

import (
	"bytes"
	"os"
	"strings"
	"sync"
	"testing"
)

// TestStdinIsEachRunsOwn: "-" reads the stdin run was given, not the
// process's, so two commands running at once each read their own input
// (a clean log and a forged one) and get their own answer.
func TestStdinIsEachRunsOwn(t *testing.T) {
	var logs [2][]byte
	for i, name := range []string{"good_mail.jsonl", "fail_forged_verdict.jsonl"} {
		data, err := os.ReadFile("../../fixtures/chain/" + name)
		if err != nil {
			t.Fatal(err)
		}
		logs[i] = data
	}
	want := [2]int{0, 1}
	var wg sync.WaitGroup
	for round := range 8 {
		for i := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var out, errb bytes.Buffer
				code := run([]string{"verify", "-"}, bytes.NewReader(logs[i]), &out, &errb)
				if code != want[i] {
					t.Errorf("round %d, log %d: exit %d, want %d (stderr %q)", round, i, code, want[i], errb.String())
				}
			}()
		}
	}
	wg.Wait()
	var out, errb bytes.Buffer
	if code := run([]string{"verify", "-"}, nil, &out, &errb); code != 2 || !strings.Contains(errb.String(), "standard input") {
		t.Errorf("nil stdin: exit %d, stderr %q; want exit 2 naming standard input as empty", code, errb.String())
	}
}
