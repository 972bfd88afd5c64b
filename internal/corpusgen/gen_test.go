package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// checkedIn is where the corpus lives, from this package's directory.
const checkedIn = "../../fixtures/corpus/web"

// generated are the files of dir the generator owns: the traces and the
// README (the policies are written by hand).
func generated(t *testing.T, dir string) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	names = append(names, filepath.Join(dir, readmeFile))
	for i := range names {
		names[i] = filepath.Base(names[i])
	}
	slices.Sort(names)
	return names
}

// TestCorpusUpToDate: the checked-in corpus is exactly what the
// generator writes, so neither can drift from the other.
func TestCorpusUpToDate(t *testing.T) {
	tmp := t.TempDir()
	if err := generate(tmp); err != nil {
		t.Fatal(err)
	}
	want, have := generated(t, tmp), generated(t, checkedIn)
	for _, n := range have {
		if !slices.Contains(want, n) {
			t.Errorf("%s is checked in but not generated: run go run ./internal/corpusgen", n)
		}
	}
	for _, n := range want {
		a, err := os.ReadFile(filepath.Join(tmp, n))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(checkedIn, n))
		if err != nil {
			t.Errorf("%s is generated but not checked in: run go run ./internal/corpusgen", n)
			continue
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs from what the generator writes: run go run ./internal/corpusgen", n)
		}
	}
}

// TestDeterministic: two runs write the same bytes.
func TestDeterministic(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	if err := generate(a); err != nil {
		t.Fatal(err)
	}
	if err := generate(b); err != nil {
		t.Fatal(err)
	}
	for _, n := range generated(t, a) {
		x, _ := os.ReadFile(filepath.Join(a, n))
		y, _ := os.ReadFile(filepath.Join(b, n))
		if !bytes.Equal(x, y) {
			t.Errorf("%s differs between two runs", n)
		}
	}
}
