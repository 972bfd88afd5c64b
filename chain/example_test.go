package chain_test

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"bailiff/audit"
	"bailiff/chain"
)

// Append records, then check the whole log and find an edit.
func Example() {
	var log bytes.Buffer
	w := chain.NewWriter(&log, chain.Sync)
	at := time.Date(2026, 11, 3, 9, 0, 0, 0, time.UTC)
	w.Append(at, "s1", chain.KindCall, &audit.CallBody{Call: "c1", Tool: "send_email",
		Args: map[string]any{"to": "attacker@evil.example"}, Digest: "sha256:…",
		Decision: audit.Decision{Verdict: "deny", Check: "taint", Reason: "tainted destination"}})
	w.Append(at.Add(time.Second), "s1", chain.KindEnd, nil)

	sum, err := chain.VerifyIntegrity(bytes.NewReader(log.Bytes()))
	fmt.Println(sum.Records, err)

	forged := bytes.Replace(log.Bytes(), []byte(`"verdict":"deny"`), []byte(`"verdict":"allow"`), 1)
	_, err = chain.VerifyIntegrity(bytes.NewReader(forged))
	var ve *chain.VerifyError
	if errors.As(err, &ve) {
		fmt.Println("record", ve.Seq, "fails:", ve.Reason)
	}
	// Output:
	// 2 <nil>
	// record 0 fails: hash does not match the record's bytes: the record was edited
}

// A checkpoint commits to the first records of a log; kept elsewhere, it
// shows a log cut short or rewritten.
func ExampleSignCheckpoint() {
	var log bytes.Buffer
	w := chain.NewWriter(&log, chain.None)
	for i := 0; i < 3; i++ {
		w.Append(time.Unix(int64(i), 0), "s1", chain.KindEnd, nil)
	}
	sum, _ := chain.VerifyIntegrity(bytes.NewReader(log.Bytes()))
	skey := "PRIVATE+KEY+audit.example/log+059a9773+AZwTG5WbpWFoCSnj8xwkpTdmlOBOiNBltoJbaB0TY0rO"
	vkey := "audit.example/log+059a9773+Acgf542s649XmolwEXKM+FLiC6ebpGSSx6oluIuOrKBK"
	signed, err := chain.SignCheckpoint(chain.Checkpoint{Origin: "audit.example/log", Size: sum.Records, Root: sum.Root}, skey)
	if err != nil {
		fmt.Println(err)
		return
	}
	c, err := chain.OpenCheckpoint(signed, vkey)
	fmt.Println(c.Origin, c.Size, err)
	// Output:
	// audit.example/log 3 <nil>
}
