package proxy

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// maxMessage is the longest JSON-RPC line read from either side.
const maxMessage = 64 << 20

// stream is one side of the proxy, as the pump sees it: whole JSON-RPC
// messages in, whole messages out. The stdio transport is a wire; a
// Streamable HTTP peer is a connStream (http.go) or, downstream, a
// muxStream (listen.go).
type stream interface {
	// read returns the next message's bytes; errTooLong for one that was
	// skipped, any other error once the stream has ended.
	read() ([]byte, error)
	send(m jsonrpc.Message) error
	sendRaw(b []byte) error
}

// wire is one side of the proxy: newline-delimited JSON-RPC messages (the
// MCP stdio transport) read and written as whole lines. Writes are
// serialized so two messages never interleave on the stream.
type wire struct {
	r  *bufio.Reader
	mu sync.Mutex
	w  io.Writer
}

func newWire(r io.Reader, w io.Writer) *wire {
	return &wire{r: bufio.NewReaderSize(r, 64<<10), w: w}
}

// errTooLong is a line longer than maxMessage; it is skipped.
var errTooLong = errors.New("message longer than the longest accepted")

// read returns the next non-empty line, without its newline.
func (c *wire) read() ([]byte, error) {
	for {
		var line []byte
		for {
			chunk, err := c.r.ReadSlice('\n')
			if len(line)+len(chunk) > maxMessage {
				// Drain the rest of the line, then report it.
				for errors.Is(err, bufio.ErrBufferFull) {
					_, err = c.r.ReadSlice('\n')
				}
				if err != nil && !errors.Is(err, io.EOF) {
					return nil, err
				}
				return nil, errTooLong
			}
			line = append(line, chunk...)
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			if err != nil {
				if errors.Is(err, io.EOF) && len(bytes.TrimSpace(line)) > 0 {
					return bytes.TrimSpace(line), nil
				}
				return nil, err
			}
			break
		}
		if line = bytes.TrimSpace(line); len(line) > 0 {
			return line, nil
		}
	}
}

// send writes one message as one line.
func (c *wire) send(m jsonrpc.Message) error {
	b, err := jsonrpc.EncodeMessage(m)
	if err != nil {
		return err
	}
	return c.sendRaw(b)
}

func (c *wire) sendRaw(b []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	buf := make([]byte, 0, len(b)+1)
	buf = append(append(buf, b...), '\n')
	_, err := c.w.Write(buf)
	return err
}
