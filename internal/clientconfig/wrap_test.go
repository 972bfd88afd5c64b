package clientconfig

import (
	"strings"
	"testing"
)

// The original entry is kept a level deeper than it was written, so the
// file and init's diff read as nested; undo gives back the exact bytes,
// also of an entry an earlier bailiff kept at its own indentation.
func TestUpstreamIndentedAndUndone(t *testing.T) {
	orig := "{\n  \"mcpServers\": {\n    \"fs\": {\n      \"command\": \"npx\",\n      \"args\": [\n        \"-y\"\n      ]\n    }\n  }\n}\n"
	ch, err := Rewrite([]byte(orig), Options{Command: "/opt/bailiff", AuditDir: "/logs"})
	if err != nil {
		t.Fatal(err)
	}
	wrapped := string(ch.Updated)
	want := "      \"x-bailiff-upstream\": {\n        \"command\": \"npx\",\n        \"args\": [\n          \"-y\"\n        ]\n      }\n    }\n"
	if !strings.Contains(wrapped, want) {
		t.Errorf("the original entry is not nested a level deeper:\n%s", wrapped)
	}
	back, err := Rewrite(ch.Updated, Options{Undo: true})
	if err != nil {
		t.Fatal(err)
	}
	if string(back.Updated) != orig {
		t.Errorf("undo did not give back the exact bytes:\n%s\nwant:\n%s", back.Updated, orig)
	}

	// As an earlier bailiff wrote it: the original at its own indentation.
	earlier := strings.Replace(wrapped, want, "      \"x-bailiff-upstream\": {\n      \"command\": \"npx\",\n      \"args\": [\n        \"-y\"\n      ]\n    }\n    }\n", 1)
	if earlier == wrapped {
		t.Fatal("the test did not build the earlier form")
	}
	back, err = Rewrite([]byte(earlier), Options{Undo: true})
	if err != nil {
		t.Fatal(err)
	}
	if string(back.Updated) != orig {
		t.Errorf("undo of an earlier wrap did not give back the exact bytes:\n%s\nwant:\n%s", back.Updated, orig)
	}
}
