package proxy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"bailiff/engine"
)

// TestDifferentialComparesTimes: the times are what verify decides by (a
// grant's expiry against the call record's ts, a signature's time against
// the grant record's ts), so a live log that differs from record's only
// in one record's time must fail the differential test. An earlier
// compare deleted ts from every record and passed such a log.
func TestDifferentialComparesTimes(t *testing.T) {
	skey, vkey := approverKey(t, "lee")
	data, err := os.ReadFile(filepath.Join("..", "fixtures", "policies", "main.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	pol, err := engine.Load("main.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	for _, fixture := range []string{"allow_approval_out_of_band.jsonl", "deny_pinning_rug_pull.jsonl"} {
		raw, err := os.ReadFile(filepath.Join("..", "fixtures", "traces", "main", fixture))
		if err != nil {
			t.Fatal(err)
		}
		d := &diffRun{t: t, pol: pol, skey: skey, vkey: vkey}
		if why := d.shape(raw); why != "" {
			t.Fatalf("%s: %s", fixture, why)
		}
		if why := d.complete(d.record()); why != "" {
			t.Fatalf("%s: %s", fixture, why)
		}
		rec := d.record()
		live, why := d.live()
		if why != "" {
			t.Fatalf("%s: %s", fixture, why)
		}
		if diff := d.compare(rec, live); diff != "" {
			t.Fatalf("%s: the unchanged logs differ: %s", fixture, diff)
		}
		for i, r := range live.lines {
			if r["kind"] != "result" && r["kind"] != "grant" {
				continue
			}
			was := r["ts"]
			r["ts"] = "2000-01-01T09:09:09.000000000Z"
			if diff := d.compare(rec, live); !strings.Contains(diff, "differs") {
				t.Errorf("%s: live record %d (%s) with its time changed from %v passes the compare", fixture, i, r["kind"], was)
			}
			r["ts"] = was
		}
	}
}
