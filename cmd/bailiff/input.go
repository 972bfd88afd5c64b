package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"bailiff/chain"
	"bailiff/replay"
)

// fileKind names what a file is, as a reader would say it: "X is a
// session trace, not an audit log".
type fileKind string

const (
	kindLog           fileKind = "an audit log"
	kindTrace         fileKind = "a session trace"
	kindPolicy        fileKind = "a policy"
	kindCheckpoint    fileKind = "a signed checkpoint"
	kindPrivateKey    fileKind = "a private key"
	kindPublicKey     fileKind = "a public key"
	kindProof         fileKind = "an inclusion proof"
	kindShadow        fileKind = "shadow or ablate output"
	kindLabels        fileKind = "a labels file"
	kindClientConfig  fileKind = "an MCP client configuration"
	kindGatewayConfig fileKind = "a gateway configuration"
	kindIdentity      fileKind = "identity settings"
	kindListing       fileKind = "a tools/list answer"
	kindBouncer       fileKind = "an mcp-bouncer policy"
	kindSecret        fileKind = "a secret"
	kindBinary        fileKind = "a binary file"
	kindUnknown       fileKind = ""
)

// sniffSize is how much of a file its kind is told from: enough for any
// first record, little enough that a multi-gigabyte log costs nothing.
const sniffSize = 64 << 10

// readInput reads a whole input file that should be want, or stdin (the
// standard input run was given) for "-". What cannot be want (a
// directory, an empty or binary file, another kind of bailiff file) is
// refused with an error that names the file and what it is, before any
// parser sees it and says something stranger.
func readInput(stdin io.Reader, name string, want ...fileKind) ([]byte, error) {
	var data []byte
	var err error
	if name == "-" {
		data, err = io.ReadAll(stdin)
		name = "standard input"
	} else {
		if err := notDir(name, want...); err != nil {
			return nil, err
		}
		data, err = os.ReadFile(name)
	}
	if err != nil {
		return nil, usageErr(fmt.Errorf("cannot read %s: %v", name, unwrapPath(err)), "")
	}
	if err := checkKind(name, data, want...); err != nil {
		return nil, err
	}
	return data, nil
}

// openInput opens an input to stream, such as a log too large to hold,
// with the same refusals as readInput judged on its first bytes.
func openInput(stdin io.Reader, name string, want ...fileKind) (io.ReadCloser, error) {
	var r io.Reader
	var closer io.Closer = io.NopCloser(nil)
	if name == "-" {
		r, name = stdin, "standard input"
	} else {
		if err := notDir(name, want...); err != nil {
			return nil, err
		}
		f, err := os.Open(name)
		if err != nil {
			return nil, usageErr(fmt.Errorf("cannot read %s: %v", name, unwrapPath(err)), "")
		}
		r, closer = f, f
	}
	// The head is read whole and handed back before the rest, not kept
	// in a buffer for the life of the reader: a verify of a hundred logs
	// holds a hundred readers.
	head := make([]byte, sniffSize)
	n, err := io.ReadFull(r, head)
	head = head[:n]
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		closer.Close()
		return nil, usageErr(fmt.Errorf("cannot read %s: %v", name, unwrapPath(err)), "")
	}
	if err := checkKind(name, head, want...); err != nil {
		closer.Close()
		return nil, err
	}
	return struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), r), closer}, nil
}

// checkFile refuses name as openInput would, for a reader that opens the
// file itself (to seek in it or append to it).
func checkFile(name string, want ...fileKind) error {
	if name == "-" {
		// Checking would consume what it checks: a command that reads
		// standard input opens it once, with openInput. One that calls
		// checkFile reads the file again later, or the files beside it.
		return usageErr(errors.New("standard input (-) cannot be given here: this command reads the file again, or the files beside it (its evidence store or approvals), so it needs a file name"), "")
	}
	f, err := openInput(nil, name, want...) // never "-", refused above
	if err != nil {
		return err
	}
	return f.Close()
}

// wanted says what was wanted: "an audit log or a session trace".
func wanted(want []fileKind) string {
	s := make([]string, len(want))
	for i, k := range want {
		s[i] = string(k)
	}
	return strings.Join(s, " or ")
}

func notDir(name string, want ...fileKind) error {
	st, err := os.Stat(name)
	if err != nil {
		return usageErr(fmt.Errorf("cannot read %s: %v", name, unwrapPath(err)), "")
	}
	if st.IsDir() {
		return usageErr(fmt.Errorf("%s is a directory, not %s", name, wanted(want)), "")
	}
	return nil
}

// checkKind refuses head (the start of a file, or all of it) when it
// cannot be want.
func checkKind(name string, head []byte, want ...fileKind) error {
	if len(bytes.TrimSpace(head)) == 0 {
		return usageErr(fmt.Errorf("%s is empty, not %s", name, wanted(want)), "")
	}
	if slices.Contains(want, kindSecret) {
		return nil // any bytes are a secret
	}
	got := sniff(head)
	if got == kindUnknown || slices.Contains(want, got) {
		return nil // the format's own parser has the last word
	}
	return usageErr(fmt.Errorf("%s is %s, not %s", name, got, wanted(want)), "")
}

var (
	publicKeyLine = regexp.MustCompile(`^[^\s+]+\+[0-9a-f]{8}\+[A-Za-z0-9+/]+=*$`)
	yamlTopKey    = regexp.MustCompile(`(?m)^([a-z_]+):`)
)

// sniff says what head looks like, or kindUnknown. It only claims a kind
// on a positive sign of it, so an unusual but valid file of the wanted
// kind always reaches its parser.
func sniff(head []byte) fileKind {
	// What a log's lines look like is chain's to say, and what a
	// trace's events are replay's. A log whose first line was edited
	// past its prefix is still a log, told by its keys below: it must
	// reach verify as an integrity failure, not be called another file.
	if chain.StartsLikeLog(head) {
		return kindLog
	}
	line, _, _ := bytes.Cut(head, []byte("\n"))
	if k := sniffJSONLine(line); k != kindUnknown {
		return k
	}
	if bytes.IndexByte(head, 0) >= 0 || !validPrefix(head) {
		return kindBinary
	}
	text := strings.TrimSpace(string(head))
	switch {
	case strings.HasPrefix(text, "PRIVATE+KEY+"):
		return kindPrivateKey
	case !strings.ContainsAny(text, "\n") && publicKeyLine.MatchString(text):
		return kindPublicKey
	case strings.Contains(text, "\n\n— "):
		return kindCheckpoint
	case strings.HasPrefix(text, "{"):
		return sniffJSONDoc(head)
	}
	for _, m := range yamlTopKey.FindAllStringSubmatch(text, -1) {
		switch m[1] {
		case "rules", "packs", "trusted_sources", "redact", "approval":
			return kindPolicy
		case "servers":
			return kindGatewayConfig
		case "issuer", "audience":
			return kindIdentity
		}
	}
	return kindUnknown
}

// validPrefix is utf8.Valid, allowing head to end inside a character
// (where the sniff window cut it).
func validPrefix(head []byte) bool {
	if utf8.Valid(head) {
		return true
	}
	for i := len(head) - 1; i >= 0 && i > len(head)-utf8.UTFMax; i-- {
		if utf8.RuneStart(head[i]) {
			return !utf8.FullRune(head[i:]) && utf8.Valid(head[:i])
		}
	}
	return false
}

// sniffJSONLine tells the JSON-lines kinds apart by the first line's keys.
func sniffJSONLine(line []byte) fileKind {
	var obj map[string]json.RawMessage
	if json.Unmarshal(line, &obj) != nil {
		return kindUnknown
	}
	return sniffJSONKeys(obj)
}

// sniffJSONDoc reads the top-level keys of a JSON document that spans
// lines, as far as head holds them.
func sniffJSONDoc(head []byte) fileKind {
	dec := json.NewDecoder(bytes.NewReader(head))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return kindUnknown
	}
	obj := map[string]json.RawMessage{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			break
		}
		k, _ := t.(string)
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			obj[k] = nil
			break
		}
		obj[k] = v
	}
	return sniffJSONKeys(obj)
}

// toolsKind tells a tools/list answer (a list of tools) from a policy
// that holds only tool contracts (a map of them) by the value's shape.
func toolsKind(v json.RawMessage) fileKind {
	switch t := bytes.TrimSpace(v); {
	case len(t) > 0 && t[0] == '[':
		return kindListing
	case len(t) > 0 && t[0] == '{':
		return kindPolicy
	}
	return kindUnknown
}

// sniffJSONKeys says what a JSON object with these top-level keys is. A
// key whose value the sniff window cut is present, with a nil value.
func sniffJSONKeys(obj map[string]json.RawMessage) fileKind {
	has := func(k string) bool { _, ok := obj[k]; return ok }
	switch {
	case has("v") && has("seq") && has("kind"):
		return kindLog // a record line, its prefix edited
	case has("type") && (has("calls") || has("check") || has("category") || has("key")):
		return kindShadow
	case has("label") && has("call") && has("session"):
		return kindLabels
	case has("checkpoint") && has("proof"):
		return kindProof
	case has("mcpServers"):
		return kindClientConfig
	case has("rules") || has("packs"):
		return kindPolicy // before "tools": a policy may hold tool contracts
	case has("servers"):
		return kindGatewayConfig
	case len(obj) == 1:
		for k := range obj {
			switch {
			case k == "tools":
				// A trace's tools event is never its first line.
				return toolsKind(obj["tools"])
			case replay.IsEventKind(k):
				return kindTrace
			}
		}
	case has("tools"):
		return toolsKind(obj["tools"])
	}
	return kindUnknown
}
