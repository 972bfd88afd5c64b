package proxy

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"bailiff/chain"
)

// TestRootsScreenReadsExactly: the screen reads a client's roots answer
// as a case-sensitive server does, and refuses what two readers would
// read apart: a "URI" beside "uri" (Go's decoder takes the last of them
// for the field, TypeScript's JSON.parse only "uri"), a "Roots" beside
// "roots", a key given twice. A protected root never reaches the server
// under any spelling a server might read.
func TestRootsScreenReadsExactly(t *testing.T) {
	prot, safe := t.TempDir(), t.TempDir()
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	w, err := chain.Open(log, chain.Sync)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	p := newProxyOn(Options{Protected: []string{prot}, Log: w, Session: "s"}, newMuxStream())
	id, _ := jsonrpc.MakeID("r1")
	screen := func(result string) *jsonrpc.Response {
		return p.screenRootsAnswer(&jsonrpc.Response{ID: id, Result: json.RawMessage(result)}, "srv")
	}
	P, S := `"file://`+prot+`"`, `"file://`+safe+`"`
	for name, result := range map[string]string{
		"uri, then URI":       `{"roots":[{"uri":` + P + `,"URI":` + S + `}]}`,
		"URI, then uri":       `{"roots":[{"uri":` + S + `,"URI":` + P + `}]}`,
		"Uri alone":           `{"roots":[{"Uri":` + P + `}]}`,
		"no uri":              `{"roots":[{"name":"x"}]}`,
		"uri twice":           `{"roots":[{"uri":` + S + `,"uri":` + P + `}]}`,
		"Roots beside roots":  `{"roots":[{"uri":` + S + `}],"Roots":[{"uri":` + P + `}]}`,
		"the plain protected": `{"roots":[{"uri":` + P + `}]}`,
	} {
		r := screen(result)
		if r.Error == nil && strings.Contains(string(r.Result), prot) {
			t.Errorf("%s: the server is passed %s", name, r.Result)
		}
	}
	if r := screen(`{"roots":[{"uri":` + S + `,"name":"ws"}]}`); r.Error != nil || !strings.Contains(string(r.Result), safe) {
		t.Errorf("a plain root outside every protected path: %+v, want it kept", r)
	}
}
