// Package export turns an audit log's records into events another
// system keeps (JSON lines, OpenTelemetry log records, Splunk HEC
// events), and checks such a copy against the log it came from.
//
// Each event carries its record's exact line, so the copy is evidence,
// not only a log: the line's hash can be recomputed from the event
// alone, and Check compares every event with the record at its place in
// the chain, naming the first that was dropped, altered or invented.
// The fields beside the line (seq, hash, verdict, tool, …) are what a
// SIEM indexes; Check compares them too, since a reader queries them and
// never the line.
//
// An event is one line. Check reads the file export writes, or a copy
// that kept each event as one JSON object per line (another key order or
// spacing compares equal); one that regrouped events into other lines
// does not.
package export
