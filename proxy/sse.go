package proxy

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// A server on Streamable HTTP may send what belongs to no request of the
// client (a request for its roots right after initialized, an
// elicitation a tool started in the background, list_changed) on the
// standalone stream: an HTTP GET the client holds open. The SDK opens it
// only for its own ClientSession, which bailiff, relaying the handshake,
// does not have; so bailiff opens it itself once the handshake is done,
// and what arrives on it goes to the pump like any other message.

// sseEvent is one server-sent event: its data and id.
type sseEvent struct {
	id   string
	data []byte
}

// readSSE reads the events of an event stream (the WHATWG grammar: lines
// of "field: value", a blank line ending an event, ":" a comment), and
// calls fn with each that carries data; retry is the reconnection delay
// the stream asked for, if any. No event longer than max is kept.
func readSSE(r io.Reader, max int, fn func(sseEvent) error) (retry time.Duration, err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var ev sseEvent
	var data bytes.Buffer
	for {
		line, err := readLine(br, max)
		if err != nil {
			return retry, err
		}
		if len(line) == 0 {
			if data.Len() > 0 {
				ev.data = bytes.TrimSuffix(data.Bytes(), []byte("\n"))
				if err := fn(ev); err != nil {
					return retry, err
				}
			}
			data.Reset()
			ev.data = nil
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "data":
			if data.Len()+len(value)+1 > max {
				return retry, errTooLong
			}
			data.Write(value)
			data.WriteByte('\n')
		case "id":
			if !bytes.ContainsRune(value, 0) {
				ev.id = string(value)
			}
		case "retry":
			if ms, err := strconv.Atoi(string(value)); err == nil && ms >= 0 {
				retry = time.Duration(ms) * time.Millisecond
			}
		}
	}
}

// readLine reads one line of an event stream, ended by CRLF, LF or CR,
// without its end; one longer than max is an error.
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		b, err := br.ReadByte()
		if err != nil {
			if errors.Is(err, io.EOF) && len(line) > 0 {
				return line, nil
			}
			return nil, err
		}
		switch b {
		case '\n':
			return line, nil
		case '\r':
			if next, err := br.Peek(1); err == nil && next[0] == '\n' {
				_, _ = br.ReadByte()
			}
			return line, nil
		}
		if len(line) >= max {
			return nil, errTooLong
		}
		line = append(line, b)
	}
}

// standaloneRetries bounds the reconnections of a standalone stream that
// keeps failing; a stream that delivered an event starts the count anew.
const standaloneRetries = 5

// listen holds the standalone stream open for the session's life,
// reconnecting (with Last-Event-ID) when it drops. A server that offers
// none (405, or any answer that is not an event stream) is not asked
// again.
func (s *connStream) listen(client *http.Client, url string) {
	lastID, failures := "", 0
	for s.ctx.Err() == nil && failures < standaloneRetries {
		delivered, retry, again := s.listenOnce(client, url, &lastID)
		if !again {
			return
		}
		if delivered {
			failures = 0
		} else {
			failures++
		}
		if retry <= 0 {
			retry = time.Second
		}
		select {
		case <-time.After(min(retry, time.Minute)):
		case <-s.ctx.Done():
		}
	}
}

// listenOnce opens the stream once and reads it to its end; again says
// whether it is worth opening again.
func (s *connStream) listenOnce(client *http.Client, url string, lastID *string) (delivered bool, retry time.Duration, again bool) {
	req, err := http.NewRequestWithContext(s.ctx, http.MethodGet, url, nil)
	if err != nil {
		return false, 0, false
	}
	req.Header.Set("Accept", "text/event-stream")
	if id := s.conn.SessionID(); id != "" {
		req.Header.Set("Mcp-Session-Id", id)
	}
	if *lastID != "" {
		req.Header.Set("Last-Event-ID", *lastID)
	}
	resp, err := client.Do(req)
	if err != nil {
		return false, 0, true
	}
	defer resp.Body.Close()
	if mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type")); resp.StatusCode != http.StatusOK || err != nil || mt != "text/event-stream" {
		return false, 0, false
	}
	retry, _ = readSSE(resp.Body, maxMessage, func(ev sseEvent) error {
		if ev.id != "" {
			*lastID = ev.id
		}
		m, err := jsonrpc.DecodeMessage(ev.data)
		if err != nil {
			return nil // not a message: nothing to relay
		}
		delivered = true
		select {
		case s.in <- m:
			return nil
		case <-s.ctx.Done():
			return s.ctx.Err()
		}
	})
	return delivered, retry, true
}

// listenAfterHandshake starts the standalone stream once the initialize
// answer is in, for the handshake revisions (2026-07-28 has none).
func (s *connStream) listenAfterHandshake(version string) {
	if version >= revStateless || s.client == nil {
		return
	}
	s.listening.Do(func() { go s.listen(s.client, s.url) })
}
