package export

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"bailiff/chain"
)

// Format is a way of writing events.
type Format string

const (
	JSONL     Format = "jsonl"
	OTLP      Format = "otlp"
	SplunkHEC Format = "splunk-hec"
)

// Formats are the formats export writes, in the order help lists them.
var Formats = []Format{OTLP, JSONL, SplunkHEC}

// ParseFormat reads a --format value.
func ParseFormat(s string) (Format, error) {
	for _, f := range Formats {
		if string(f) == s {
			return f, nil
		}
	}
	return "", fmt.Errorf("unknown export format %q: want otlp, jsonl or splunk-hec", s)
}

// Append appends e in format f as one line, with its newline.
func Append(b []byte, f Format, e Event) []byte {
	switch f {
	case OTLP:
		b = appendOTLP(b, e)
	case SplunkHEC:
		b = append(b, `{"time":`...)
		b = appendHECTime(b, e)
		b = append(b, `,"source":"bailiff","sourcetype":"bailiff:audit","event":`...)
		b = appendJSONL(b, e)
		b = append(b, '}')
	default:
		b = appendJSONL(b, e)
	}
	return append(b, '\n')
}

// appendJSONL is the event as one flat object: what a SIEM indexes
// first, the line last.
func appendJSONL(b []byte, e Event) []byte {
	b = append(b, `{"log":`...)
	b = appendString(b, e.Log)
	b = append(b, `,"seq":`...)
	b = strconv.AppendInt(b, e.Seq, 10)
	b = appendField(b, "hash", e.Hash)
	b = appendField(b, "prev", e.Prev)
	b = appendField(b, "ts", e.TS.UTC().Format(chain.TimeFormat))
	b = appendField(b, "session", e.Session)
	b = appendField(b, "kind", e.Kind)
	b = appendField(b, "verified", string(e.Verified))
	for _, k := range attrKeys {
		if v, ok := e.Attrs[k]; ok {
			b = appendField(b, k, v)
		}
	}
	b = appendField(b, "line", e.Line)
	return append(b, '}')
}

// appendHECTime is the record's time as HEC wants it: seconds since the
// epoch, a number, to the millisecond. More digits than that would not
// survive a reader that keeps numbers as float64; the exact time is in
// the event's ts and line.
func appendHECTime(b []byte, e Event) []byte {
	ms := e.TS.UnixMilli()
	sec, frac := ms/1e3, ms%1e3
	if frac < 0 {
		sec, frac = sec-1, frac+1e3
	}
	b = strconv.AppendInt(b, sec, 10)
	return fmt.Appendf(b, ".%03d", frac)
}

// appendOTLP is the event as an OTLP/JSON ExportLogsServiceRequest
// holding one log record, the form the collector's file exporter writes
// and its otlpjsonfile receiver reads: the line is the body, the rest
// are attributes under bailiff.
func appendOTLP(b []byte, e Event) []byte {
	b = append(b, `{"resourceLogs":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"bailiff"}}]},"scopeLogs":[{"scope":{"name":"bailiff.audit"},"logRecords":[{"timeUnixNano":"`...)
	b = strconv.AppendInt(b, e.TS.UnixNano(), 10)
	sev, text := 9, "INFO"
	if e.Attrs["verdict"] == "deny" || e.Kind == "malformed" {
		sev, text = 13, "WARN"
	}
	b = fmt.Appendf(b, `","severityNumber":%d,"severityText":"%s",`, sev, text)
	if t := e.Attrs["trace"]; validTraceID(t) {
		// The log record joins its call's trace where a backend shows both.
		b = append(b, `"traceId":"`...)
		b = append(b, t...)
		b = append(b, `",`...)
	}
	b = append(b, `"body":{"stringValue":`...)
	b = appendString(b, e.Line)
	b = append(b, `},"attributes":[`...)
	b = appendAttr(b, "log", e.Log, false)
	b = append(b, `,{"key":"bailiff.seq","value":{"intValue":"`...)
	b = strconv.AppendInt(b, e.Seq, 10)
	b = append(b, `"}}`...)
	b = appendAttr(b, "hash", e.Hash, true)
	b = appendAttr(b, "prev", e.Prev, true)
	b = appendAttr(b, "session", e.Session, true)
	b = appendAttr(b, "kind", e.Kind, true)
	b = appendAttr(b, "verified", string(e.Verified), true)
	for _, k := range attrKeys {
		if v, ok := e.Attrs[k]; ok {
			b = appendAttr(b, k, v, true)
		}
	}
	return append(b, `]}]}]}]}`...)
}

func appendAttr(b []byte, key, value string, comma bool) []byte {
	if comma {
		b = append(b, ',')
	}
	b = append(b, `{"key":"bailiff.`...)
	b = append(b, key...)
	b = append(b, `","value":{"stringValue":`...)
	b = appendString(b, value)
	return append(b, `}}`...)
}

func appendField(b []byte, key, value string) []byte {
	b = append(b, ',', '"')
	b = append(b, key...)
	b = append(b, '"', ':')
	return appendString(b, value)
}

// appendString appends s as a JSON string, without the HTML escaping
// that would change nothing a reader decodes but every byte a reader
// compares.
func appendString(b []byte, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
}

// errNoKey is an event that does not say where it belongs.
var errNoKey = errors.New(`not an event of this copy's format: it lacks its log id, its seq or its "verified" claim`)

// validTraceID is a trace id OTLP takes: 32 lower-case hex digits, not
// all zero. Anything else stays an attribute only.
func validTraceID(s string) bool {
	if len(s) != 32 || strings.Trim(s, "0") == "" {
		return false
	}
	for _, c := range []byte(s) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
