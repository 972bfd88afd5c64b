package shadow

import "testing"

// TestParseLabelsRefusesDuplicateKeys: a label line with a key given twice
// is refused with the file, the line and the key, where Go alone would
// keep the last value and another reader of the file the first. Keys
// are compared as decoded.
func TestParseLabelsRefusesDuplicateKeys(t *testing.T) {
	const first = `{"session":"demo","call":"c2","label":"benign"}` + "\n"
	for _, c := range []struct{ line, want string }{
		{`{"session":"demo","call":"c1","call":"c3","label":"attack"}`, `labels.jsonl:2: duplicate key "call" at byte 30`},
		{`{"session":"demo","call":"c1","label":"benign","l\u0061bel":"attack"}`, `labels.jsonl:2: duplicate key "label" at byte 47`},
		{`{"session":"demo","call":"c1","label":"attack","note":{"by":"ana","by":"bo"}}`, `labels.jsonl:2: duplicate key "by" at byte 66`},
	} {
		_, err := ParseLabels("labels.jsonl", []byte(first+c.line+"\n"))
		if err == nil || err.Error() != c.want {
			t.Errorf("ParseLabels(%s): %v, want %q", c.line, err, c.want)
		}
	}
	if _, err := ParseLabels("labels.jsonl", []byte(first+`{"session":"demo","call":"c1","label":"attack"}`)); err != nil {
		t.Fatalf("setup: %v", err)
	}
}
