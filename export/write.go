package export

import (
	"bufio"
	"fmt"
	"io"

	"bailiff/chain"
)

// Write writes the events of the logs' records, log by log in order, in
// format f, and returns how many it wrote. A log is read to exactly
// where it was verified: records appended since are left for the next
// export. A log whose first records are not the ones verified (rewritten
// in between) is an error after its events were written: the caller
// discards what it wrote.
func Write(w io.Writer, f Format, logs []Log) (int64, error) {
	bw := bufio.NewWriterSize(w, 1<<20)
	var n int64
	var buf []byte
	for _, l := range logs {
		r := chain.NewReader(l.R)
		var id chain.Hash
		for i := int64(0); i < l.Records; i++ {
			rec, err := r.Next()
			if err != nil {
				return n, fmt.Errorf("%s changed since it was verified: %v", l.Name, err)
			}
			if i == 0 {
				id = rec.Hash
			}
			buf = Append(buf[:0], f, FromRecord(id, rec, l.Level))
			if _, err := bw.Write(buf); err != nil {
				return n, err
			}
			n++
		}
		if r.Root() != l.Root {
			return n, fmt.Errorf("%s changed since it was verified: its first %d records are not the ones verified", l.Name, l.Records)
		}
	}
	return n, bw.Flush()
}
