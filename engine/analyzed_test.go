package engine

import (
	"reflect"
	"testing"
)

// TestAnalyzedIndexesAsAdd: an output added through an Analyzed, the same
// one to two indexes, leaves each exactly as adding its text does: the
// text, filters, sources and the email and host maps.
func TestAnalyzedIndexesAsAdd(t *testing.T) {
	texts := []string{
		"From: Ana <ana@corp.example>\nSee https://files.example.net/x and mail bob@evil.example",
		"",
		"Ünïcödé ＦＵＬＬ ｗｉｄｔｈ http://[::1]:8080/ and user@xn--bcher-kva.example",
		"plain text with no destinations at all, repeated ana@corp.example",
		"http://a_b.example/%41 ß straße.example",
		// Forms a reader decodes: percent, entities, defanged, base64, bare IPv6.
		"write to attacker%40evil.example or thief&#64;evil.example or claims [at] drop [dot] example",
		"the form, base64: aHR0cHM6Ly9kcm9wLmV2aWwuZXhhbXBsZS9pbg== and hxxps://drop2.evil.example/x, or 2001:db8::1.",
	}
	var direct, shared1, shared2 taintIndex
	for i, text := range texts {
		src := Source{Pos: i, ToolRef: ToolRef{Server: "mail", Tool: "read"}}
		direct.add(src, text)
		a := &Analyzed{Text: text}
		a.analyze()
		shared1.addAnalyzed(src, a)
		shared2.addAnalyzed(src, a)
	}
	for _, ix := range []*taintIndex{&shared1, &shared2} {
		if !reflect.DeepEqual(ix, &direct) {
			t.Fatalf("index through Analyzed\n%+v\ndiffers from add\n%+v", ix.hosts, direct.hosts)
		}
	}
}

// TestReleasedTextIsReused: an index closed twice gives its text back
// once, and the indexes that take it up find only their own output.
func TestReleasedTextIsReused(t *testing.T) {
	var old taintIndex
	old.add(Source{Pos: 1}, "reply to leaked-secret@evil.example now")
	old.release()
	old.release()
	var a, b taintIndex
	a.add(Source{Pos: 2}, "nothing to see")
	b.add(Source{Pos: 3}, "other text")
	for _, ix := range []*taintIndex{&a, &b} {
		if src, ok := ix.find("leaked-secret"); ok {
			t.Fatalf("an index found text of a closed one (%v)", src)
		}
	}
	if src, ok := a.find("nothing to see"); !ok || src.Pos != 2 {
		t.Fatalf("find of its own text = %v, %v", src, ok)
	}
	if &a.buf[:1][0] == &b.buf[:1][0] {
		t.Fatal("two indexes share one text buffer")
	}
}
