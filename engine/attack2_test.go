package engine

import "testing"

// destinations() dedupes by normalized value, so a second destination whose
// normalized form equals a trusted one is never judged. NFKC turns the
// full-width '／' into '/', but Node reads the raw value: everything before
// the authority's '@' is userinfo and the request goes to evil.example.
//
//	new URL("https://api.corp.example／v1／@evil.example/").host == "evil.example"
func TestNormalizedTwinIsJudgedToo(t *testing.T) {
	p := mustLoad(t, attackPolicy)
	trusted := "https://api.corp.example/v1/@evil.example/"        // path on api.corp.example: trusted
	twin := "https://api.corp.example\uff0fv1\uff0f@evil.example/" // same Normalize, host evil.example
	if Normalize(trusted) != Normalize(twin) {
		t.Fatal("precondition: the two normalize alike")
	}
	for name, args := range map[string]map[string]any{
		"list":     {"url": []any{trusted, twin}},
		"two keys": {"url": trusted, "webhook_url": twin},
		"alone":    {"url": twin},
	} {
		s := NewState("s", "srv", Principal{Subject: "ana"}, []ToolDef{{Name: "send_email"}, {Name: "http_post"}})
		d := Decide(p, s, &Call{ID: "c1", Tool: "http_post", Args: args, Digest: ArgsDigest(args)}, t0)
		if d.Verdict == Allow {
			t.Errorf("%s: %v allowed (%s); the twin goes to evil.example", name, args, d.Reason)
		}
	}
}

// underPrefix cleans the path with path.Clean, which merges empty segments
// before resolving "..". A WHATWG client keeps empty segments, so ".."
// pops the empty one:
//
//	new URL("https://api.corp.example/admin//..//v1/x").pathname == "/admin//v1/x"
//
// The request leaves the trusted prefix /v1/ (and /hook) on the trusted host.
func TestEmptySegmentDotDotStaysOutsidePrefix(t *testing.T) {
	p := mustLoad(t, attackPolicy)
	for _, url := range []string{
		"https://api.corp.example/admin//..//v1/x",      // Node: /admin//v1/x
		"https://127.0.0.1/admin//..//hook",             // Node: /admin//hook
		"https://api.corp.example/admin/x//..//..//v1/", // Node: /admin/x//v1/
	} {
		d := decideOne(t, p, "", "http_post", "url", url)
		if d.Verdict == Allow {
			t.Errorf("%q allowed (%s); a WHATWG client requests a path outside the prefix", url, d.Reason)
		}
	}
}
