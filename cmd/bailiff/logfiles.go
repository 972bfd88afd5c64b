package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"bailiff/chain"
)

// logFiles expands directory arguments into the *.jsonl files in them.
func logFiles(args []string) ([]string, error) {
	var out []string
	for _, a := range args {
		if a == "-" {
			out = append(out, a) // standard input
			continue
		}
		st, err := os.Stat(a)
		if err != nil {
			return nil, usageErr(fmt.Errorf("cannot read %s: %v", a, unwrapPath(err)), "")
		}
		if !st.IsDir() {
			out = append(out, a)
			continue
		}
		found, _ := filepath.Glob(filepath.Join(a, "*.jsonl"))
		if len(found) == 0 {
			return nil, usageErr(fmt.Errorf("%s is a directory that holds no *.jsonl logs", a), "")
		}
		sort.Strings(found)
		out = append(out, found...)
	}
	// One file named twice (a directory and a file in it, two spellings
	// of a path, a link) would be read twice, and every count over it
	// doubled.
	for i, a := range out {
		for _, b := range out[:i] {
			if a == b || sameFile(a, b) {
				if a == b {
					return nil, usageErr(fmt.Errorf("%s is given twice: it would be read twice", a), "")
				}
				return nil, usageErr(fmt.Errorf("%s and %s are one file: it would be read twice", b, a), "")
			}
		}
	}
	return out, nil
}

// distinctLogs refuses two audit logs that begin with the same record:
// one is a copy of the other, or a copy of its start, and a count over
// both would count their sessions twice. The first record holds its
// time, session and policy, so two logs that did not share a writer do
// not share it. files maps each name as given to the file it is read
// from (a log on standard input is read from its spooled copy).
func distinctLogs(names []string, files map[string]string) error {
	first := map[string]string{}
	for _, name := range names {
		file := name
		if f, ok := files[name]; ok {
			file = f
		}
		h, err := firstLineHash(file)
		if err != nil || h == "" {
			continue // not a log, or unreadable: its reader says so
		}
		if prev, ok := first[h]; ok {
			return usageErr(fmt.Errorf("%s and %s begin with the same record: one is a copy of the other, and their sessions would be counted twice", prev, name), "")
		}
		first[h] = name
	}
	return nil
}

// firstLineHash is chain.FirstLineHash of the named file.
func firstLineHash(name string) (string, error) {
	f, err := os.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	return chain.FirstLineHash(f)
}
