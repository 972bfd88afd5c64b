package audit

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"bailiff/chain"

	fastjson "github.com/segmentio/encoding/json"
)

// agree fails t unless the hand encoding of a body decoded from data is
// encoding/json's, or the hand encoder gave up (chain.MarshalBody then
// uses encoding/json itself). It reports whether the hand encoder ran.
func agree(t *testing.T, data []byte, v any) bool {
	t.Helper()
	if _, err := fastjson.Parse(data, v, fastjson.UseNumber); err != nil {
		return false
	}
	fast, ok := v.(chain.Canonical).AppendCanonical(nil)
	slow, err := chain.MarshalGeneral(v)
	switch {
	case !ok:
		return false
	case err != nil:
		t.Fatalf("hand encoding %s of a body MarshalBody refuses (%v)", fast, err)
	case !bytes.Equal(fast, slow):
		t.Fatalf("hand encoding differs:\n hand %s\n json %s", fast, slow)
	}
	return true
}

// FuzzCanonicalBody: for any call or result body, the bytes DecodeBody
// compares against are encoding/json's, so the hand encoder changes no
// accept or refuse; and DecodeBody accepts only what re-encodes to itself
// through encoding/json.
func FuzzCanonicalBody(f *testing.F) {
	for _, b := range fixtureBodies(f) {
		f.Add(b)
	}
	f.Add([]byte(`{"call":"c1","tool":"t","args":{"a":[1,-0.5e+3,"\u2028<&>\u0001\b\f",true,null,{}],"b":{"z":1,"a":[]}},"redacted":["a"],"resolved":{"y":"1","x":"2"},"digest":"d","elicit":true,"verdict":"deny","check":"taint","reason":"r","tainted_by":{"seq":3,"server":"s","tool":"t"},"destination":"x","grant":"g"}`))
	f.Add([]byte(`{"call":"c1","server":"s","tool":"t","channel":"resources/read","status":"ok","content":"sha256:00","size":12}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		agree(t, data, &CallBody{})
		agree(t, data, &ResultBody{})
		for _, v := range []any{&CallBody{}, &ResultBody{}} {
			if chain.DecodeBody(data, v) != nil {
				continue
			}
			var std bytes.Buffer
			enc := json.NewEncoder(&std)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(v); err != nil || !bytes.Equal(bytes.TrimSuffix(std.Bytes(), []byte("\n")), data) {
				t.Fatalf("DecodeBody accepted %s, which encoding/json writes as %s (%v)", data, std.Bytes(), err)
			}
		}
	})
}

// TestCanonicalBodyFixtures: every call and result body of the fixture
// logs takes the hand-encoded path, and agrees with encoding/json.
func TestCanonicalBodyFixtures(t *testing.T) {
	names, err := filepath.Glob("../fixtures/chain/*.jsonl")
	if err != nil || len(names) == 0 {
		t.Fatal("no fixture logs", err)
	}
	n := 0
	for _, name := range names {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		rd := chain.NewReader(bytes.NewReader(data))
		for {
			rec, err := rd.Next()
			if err == io.EOF || err != nil {
				break
			}
			switch rec.Kind {
			case chain.KindCall:
				if agree(t, rec.Body, &CallBody{}) {
					n++
				}
			case chain.KindResult:
				if agree(t, rec.Body, &ResultBody{}) {
					n++
				}
			}
		}
	}
	if n < 20 {
		t.Fatalf("only %d bodies encoded by hand", n)
	}
}

// FuzzDecodeFast: a body the reflection-free decoder accepts is one the
// general path accepts too, decoded to the same values.
func FuzzDecodeFast(f *testing.F) {
	for _, b := range fixtureBodies(f) {
		f.Add(b)
	}
	f.Add([]byte(`{"call":"c1","tool":"t","args":{"a":[1,-0.5e+3,"\u2028<&>\u0001\b\f\"\\",true,false,null,{}],"b":{"z":1,"a":[]}},"redacted":["a"],"resolved":{"x":"2","y":"1"},"digest":"d","elicit":true,"trace":"0af7651916cd43dd8448eb211c80319c","verdict":"deny","check":"taint","reason":"r","tainted_by":{"seq":3,"server":"s","tool":"t"},"destination":"x","grant":"g"}`))
	f.Add([]byte(`{"call":"c1","server":"s","tool":"t","channel":"resources/read","status":"ok","content":"sha256:00","size":12}`))
	// Field names as argument names, an escaped field name, a quote
	// escaped inside a name.
	f.Add([]byte(`{"call":"c1","tool":"t","args":{"args":{"call":"x"},"seq":1,"tool":"y"},"digest":"d","verdict":"allow","check":"rules","reason":"r"}`))
	f.Add([]byte(`{"c\u0061ll":"c1","tool":"t","args":{"a\"b":"\"x\""},"digest":"d","verdict":"allow"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, pair := range [][2]any{{&CallBody{}, &CallBody{}}, {&ResultBody{}, &ResultBody{}}} {
			if !pair[0].(chain.FastDecoder).DecodeFast(data) {
				continue
			}
			if err := chain.DecodeGeneral(data, pair[1]); err != nil {
				t.Fatalf("decodeFast accepted %s, the general path refuses it: %v", data, err)
			}
			if !reflect.DeepEqual(pair[0], pair[1]) {
				t.Fatalf("%s decodes to\n fast    %#v\n general %#v", data, pair[0], pair[1])
			}
		}
	})
}

// TestDecodeFastFixtures: every call and result body of the fixture logs
// takes the reflection-free path.
func TestDecodeFastFixtures(t *testing.T) {
	names, _ := filepath.Glob("../fixtures/chain/good_*.jsonl")
	n := 0
	for _, name := range names {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		rd := chain.NewReader(bytes.NewReader(data))
		for {
			rec, err := rd.Next()
			if err != nil {
				break
			}
			var v any
			switch rec.Kind {
			case chain.KindCall:
				v = &CallBody{}
			case chain.KindResult:
				v = &ResultBody{}
			default:
				continue
			}
			if !v.(chain.FastDecoder).DecodeFast(rec.Body) {
				t.Errorf("%s seq %d: not decoded by the fast path: %s", name, rec.Seq, rec.Body)
			}
			n++
		}
	}
	if n < 20 {
		t.Fatalf("only %d bodies", n)
	}
}

// fixtureBodies are the call and result bodies of the fixture logs: the
// fuzzers' seeds.
func fixtureBodies(tb testing.TB) [][]byte {
	names, _ := filepath.Glob("../fixtures/chain/good_*.jsonl")
	var out [][]byte
	for _, name := range names {
		data, err := os.ReadFile(name)
		if err != nil {
			tb.Fatal(err)
		}
		rd := chain.NewReader(bytes.NewReader(data))
		for len(out) < 40 {
			rec, err := rd.Next()
			if err != nil {
				break
			}
			if rec.Kind == chain.KindCall || rec.Kind == chain.KindResult {
				out = append(out, rec.Body)
			}
		}
	}
	if len(out) == 0 {
		tb.Fatal("no fixture bodies")
	}
	return out
}

// FuzzAppendJSONString: the hand string encoder, with its eight-byte
// skips, writes exactly what encoding/json writes without HTML escaping,
// whatever bytes sit at whatever offset.
func FuzzAppendJSONString(f *testing.F) {
	f.Add("The quarterly numbers are attached; please review before Friday.")
	f.Add("0123456\"89abcdef\\01234567\x1f9abcdef\u2028x\xffyz <&> \u00e9\u4e16\U0001F600")
	f.Add("aaaaaaa\x7f\x80aaaaaaaaaaaaaaaaa")
	f.Fuzz(func(t *testing.T, s string) {
		var std bytes.Buffer
		enc := json.NewEncoder(&std)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		want := bytes.TrimSuffix(std.Bytes(), []byte("\n"))
		if got := appendJSONString([]byte("x"), s); !bytes.Equal(got[1:], want) || got[0] != 'x' {
			t.Fatalf("appendJSONString(%q) = %s, encoding/json writes %s", s, got[1:], want)
		}
	})
}

// plain8 agrees with a byte-by-byte look over every byte value in every
// position of the word.
func TestPlain8(t *testing.T) {
	for pos := 0; pos < 8; pos++ {
		for c := 0; c < 256; c++ {
			w := []byte("abcdefgh")
			w[pos] = byte(c)
			want := c >= 0x20 && c < 0x80 && c != '"' && c != '\\'
			if got := plain8(string(w)); got != want {
				t.Errorf("plain8 with byte %#x at %d = %v, want %v", c, pos, got, want)
			}
		}
	}
}
