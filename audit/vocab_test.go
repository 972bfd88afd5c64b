package audit

import (
	"bytes"
	"testing"

	"bailiff/chain"
	"bailiff/engine"
)

// TestScan: a scan sees every record's head, decodes only what it asks
// for, ends cleanly at a torn last line (the gateway may be writing it),
// and fails at any other break of the chain.
func TestScan(t *testing.T) {
	var buf bytes.Buffer
	w := chain.NewWriter(&buf, chain.None)
	for _, id := range []string{"c1", "c2"} {
		args := map[string]any{"n": id}
		if _, err := w.Append(t0, "s", chain.KindCall, &CallBody{Call: id, Tool: "send", Args: args, Digest: engine.ArgsDigest(args),
			Decision: Decision{Verdict: "ask", Check: "rules"}}); err != nil {
			t.Fatal(err)
		}
	}
	log := buf.Bytes()
	scan := func(data []byte) ([]string, error) {
		var got []string
		err := Scan(bytes.NewReader(data), func(h RecordHead, decode func() (*Event, error)) {
			if CallID(h.Body) != "c2" {
				got = append(got, "skipped "+CallID(h.Body))
				return
			}
			ev, err := decode()
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, "decoded "+ev.Call.Call.ID+" "+string(ev.Call.Recorded.Verdict))
		})
		return got, err
	}
	if got, err := scan(log); err != nil || len(got) != 2 || got[0] != "skipped c1" || got[1] != "decoded c2 ask" {
		t.Errorf("a whole log: %v, %v", got, err)
	}
	torn := log[:len(log)-10]
	if got, err := scan(torn); err != nil || len(got) != 1 {
		t.Errorf("a torn last line: %v, %v; want the first record and no error", got, err)
	}
	edited := bytes.Replace(log, []byte(`"n":"c1"`), []byte(`"n":"cX"`), 1)
	if _, err := scan(edited); err == nil {
		t.Error("an edited record was scanned without an error")
	}
}
