package proxy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The checks a request to a listening bailiff passes before any session
// sees it, and the refusals it gets.

// offMachine says why a request may not be served from where it comes:
// a page not served from this machine (its Origin), or, on a loopback
// listener, a Host that is not loopback (DNS rebinding). Empty: served.
func offMachine(r *http.Request) string {
	if o := r.Header.Get("Origin"); o != "" && !loopbackOrigin(o) {
		return "Origin " + strconv.Quote(o) + " is not on this machine"
	}
	if la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && la != nil {
		if loopbackHostPort(la.String()) && !loopbackHostPort(r.Host) {
			return "invalid Host header " + strconv.Quote(r.Host)
		}
	}
	return ""
}

// mediaTypes checks a request's Content-Type and Accept as the SDK's
// handler does: a POST is JSON and accepts both JSON and an event
// stream, a GET accepts an event stream.
func mediaTypes(r *http.Request) (string, int) {
	var jsonOK, streamOK bool
	for _, value := range r.Header.Values("Accept") {
		for _, raw := range strings.Split(value, ",") {
			base, _, _ := strings.Cut(raw, ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				streamOK = true
			case "*/*":
				jsonOK, streamOK = true, true
			}
		}
	}
	switch r.Method {
	case http.MethodPost:
		if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
			return "Content-Type must be 'application/json'", http.StatusUnsupportedMediaType
		}
		if !jsonOK || !streamOK {
			return "Accept must contain both 'application/json' and 'text/event-stream'", http.StatusBadRequest
		}
	case http.MethodGet:
		if !streamOK {
			return "Accept must contain 'text/event-stream' for GET requests", http.StatusBadRequest
		}
	}
	return "", 0
}

// loopbackHostPort reports whether host[:port] names this machine.
func loopbackHostPort(hp string) bool {
	host, _, err := net.SplitHostPort(hp)
	if err != nil {
		host = strings.Trim(hp, "[]")
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// batchAllowed refuses a JSON-RPC batch from a client of 2025-06-18 or
// later, which removed them, as the SDK's own handler does; the body is
// put back for the transport.
func batchAllowed(w http.ResponseWriter, r *http.Request) bool {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			http.Error(w, fmt.Sprintf("request body exceeds %d bytes", mbe.Limit), http.StatusRequestEntityTooLarge)
			return false
		}
		http.Error(w, "failed to read body", http.StatusBadRequest)
		return false
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	if v := r.Header.Get("Mcp-Protocol-Version"); v >= "2025-06-18" && bytes.HasPrefix(bytes.TrimLeft(body, " \t\r\n"), []byte("[")) {
		http.Error(w, "Bad Request: JSON-RPC batching is not supported in 2025-06-18 and later", http.StatusBadRequest)
		return false
	}
	return true
}

// refuseWith answers a request with a JSON-RPC error under its id, when
// its body holds one request, else the reason in plain text.
func refuseWith(w http.ResponseWriter, r *http.Request, status int, why string) {
	writeError(w, r, status, &jsonrpc.Error{Code: codeOverloaded, Message: why})
}

func writeError(w http.ResponseWriter, r *http.Request, status int, jerr *jsonrpc.Error) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<10))
	if m, err := jsonrpc.DecodeMessage(body); err == nil {
		if req, ok := m.(*jsonrpc.Request); ok && req.ID.IsValid() {
			if b, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: req.ID, Error: jerr}); err == nil {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(status)
				_, _ = w.Write(b)
				return
			}
		}
	}
	http.Error(w, http.StatusText(status)+": "+jerr.Message, status)
}
