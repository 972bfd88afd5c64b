// Command corpusgen writes the labelled corpus of web-found sends under
// fixtures/corpus/web. Run it from the repository root:
//
//	go run ./internal/corpusgen
//
// The sessions are built from tables, not written by hand, so the labels
// hold by construction (a send to where the injection pointed is an
// attack, a send to where the organisation's own page pointed is benign)
// and the corpus can be grown without the forms drifting apart.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

const outDir = "fixtures/corpus/web"

// readmeFile is generated too, so its counts cannot go stale.
const readmeFile = "README.md"

// nBenign honest sessions: a few over the 30 the corpus needs, so that
// every organisation has at least two.
const nBenign = 35

// sessions are every session in file order: benign first, then the
// attack families.
func sessions() []*session {
	var ss []*session
	for i := 0; i < nBenign; i++ {
		ss = append(ss, benign(i))
	}
	ss = append(ss, provenanceBenign(nBenign+1)...)
	as := attacks()
	return append(append(ss, as...), provenanceAttacks(len(as)+1)...)
}

// attacks lays the families out over the forms: three third-party pages,
// mail, search and two own pages per form, then the encoded and redirect
// controls. Organisations are picked by stepping through the table so
// that each family meets several of them.
func attacks() []*session {
	var ss []*session
	n := func() int { return len(ss) + 1 }
	for f, form := range forms {
		for k := 0; k < 3; k++ {
			ss = append(ss, thirdParty(n(), orgs[(f*3+k)%len(orgs)], form, k))
		}
	}
	ss = append(ss, userContent(n(), byKey("tidepool"), "url"))
	ss = append(ss, userContent(n(), byKey("flysanjose"), "email"))
	for f, form := range forms {
		ss = append(ss, inMail(n(), orgs[(f+4)%len(orgs)], form))
		ss = append(ss, inSearch(n(), orgs[(f+9)%len(orgs)], form))
		for j := 0; j < 2; j++ {
			ss = append(ss, ownPage(n(), orgs[(f*2+j+6)%len(orgs)], form, f+j))
		}
	}
	for i, e := range encodings {
		ss = append(ss, encoded(n(), orgs[(i*5+1)%len(orgs)], e, i))
	}
	for i, key := range []string{"flysanjose", "harbormutual", "cascadepower", "lakesidegrand"} {
		ss = append(ss, redirect(n(), byKey(key), i))
	}
	return ss
}

func byKey(key string) org {
	for _, o := range orgs {
		if o.key == key {
			return o
		}
	}
	panic("no organisation " + key)
}

// generate writes every session to dir and removes any other .jsonl
// there, so a session dropped from the tables leaves no stale file.
func generate(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	ss := sessions()
	keep := map[string]bool{readmeFile: true}
	if err := os.WriteFile(filepath.Join(dir, readmeFile), []byte(readme(ss)), 0o644); err != nil {
		return err
	}
	for _, s := range ss {
		b, err := s.bytes()
		if err != nil {
			return err
		}
		if keep[s.file] {
			return fmt.Errorf("two sessions write %s", s.file)
		}
		keep[s.file] = true
		if err := os.WriteFile(filepath.Join(dir, s.file), b, 0o644); err != nil {
			return err
		}
	}
	old, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		return err
	}
	for _, p := range old {
		if !keep[filepath.Base(p)] && strings.HasSuffix(p, ".jsonl") {
			if err := os.Remove(p); err != nil {
				return err
			}
		}
	}
	return nil
}

func main() {
	if err := generate(outDir); err != nil {
		fmt.Fprintf(os.Stderr, "corpusgen: error: %v\n", err)
		os.Exit(1)
	}
}
