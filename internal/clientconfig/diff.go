package clientconfig

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// diffContext is the number of unchanged lines shown around a change, as
// diff -u shows them.
const diffContext = 3

// WriteDiff prints a unified diff of a and b, the file name's text before
// and after (a longest-common-subsequence diff: configs are small).
func WriteDiff(w io.Writer, name, a, b string) {
	x, y := diffLines(a), diffLines(b)
	lcs := make([][]int, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	type line struct {
		op   byte
		text string
		a, b int // lines of a and b before this one
	}
	var out []line
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		switch {
		case i < len(x) && j < len(y) && x[i] == y[j]:
			out = append(out, line{' ', x[i], i, j})
			i, j = i+1, j+1
		case i < len(x) && (j == len(y) || lcs[i+1][j] >= lcs[i][j+1]):
			out = append(out, line{'-', x[i], i, j})
			i++
		default:
			out = append(out, line{'+', y[j], i, j})
			j++
		}
	}
	fmt.Fprintf(w, "--- %s\n+++ %s\n", name, name)
	for k := 0; k < len(out); {
		if out[k].op == ' ' {
			k++
			continue
		}
		// A hunk: from diffContext lines before this change to
		// diffContext lines after the last change within reach.
		start, end := max(0, k-diffContext), k
		for end < len(out) {
			if out[end].op != ' ' {
				k = end
			} else if end-k > 2*diffContext {
				break
			}
			end++
		}
		end = min(end, k+diffContext+1)
		var na, nb int
		for _, l := range out[start:end] {
			if l.op != '+' {
				na++
			}
			if l.op != '-' {
				nb++
			}
		}
		fmt.Fprintf(w, "@@ -%s +%s @@\n", hunkRange(out[start].a, na), hunkRange(out[start].b, nb))
		for _, l := range out[start:end] {
			fmt.Fprintf(w, "%c%s\n", l.op, l.text)
		}
		k = end
	}
}

// hunkRange is a hunk header's "start,count", where start is 1-based and,
// for an empty range, the line before it; a count of 1 is left out (as
// diff -u writes them).
func hunkRange(before, n int) string {
	switch n {
	case 0:
		return fmt.Sprintf("%d,0", before)
	case 1:
		return strconv.Itoa(before + 1)
	}
	return fmt.Sprintf("%d,%d", before+1, n)
}

func diffLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}
