package engine

import (
	"strings"
	"testing"
)

// The definitions ipv4 and endsInNumber must agree with, written as the
// split they avoid.
func splitIPv4(h string) bool {
	parts := strings.Split(h, ".")
	if len(parts) != 4 {
		return false
	}
	for _, p := range parts {
		if p == "" || len(p) > 3 || strings.Trim(p, "0123456789") != "" {
			return false
		}
	}
	return true
}

func splitEndsInNumber(h string) bool {
	parts := strings.Split(h, ".")
	if parts[len(parts)-1] == "" {
		if len(parts) == 1 {
			return false
		}
		parts = parts[:len(parts)-1]
	}
	last := parts[len(parts)-1]
	if last != "" && strings.Trim(last, "0123456789") == "" {
		return true
	}
	if len(last) >= 2 && (last[:2] == "0x" || last[:2] == "0X") {
		return strings.Trim(last[2:], "0123456789abcdefABCDEF") == ""
	}
	return false
}

func TestHostPartsAgreeWithSplit(t *testing.T) {
	hosts := []string{"", ".", "..", "1.2.3.4", "1.2.3.4.", "1.2.3", "1.2.3.4.5", "01.002.3.255", "1234.1.1.1",
		"1..3.4", "a.b.c.d", "1.2.3.x", "example.com", "example.com.", "a.1", "a.1.", "a.1..", "0x7f.1",
		"a.0x", "a.0X1F", "a.0xg", "x.0x.", "1.2.3.4x", "١.٢.٣.٤", "a.b.", "0x", "12"}
	// Every string of up to five bytes from a small alphabet too.
	alpha := []byte{'1', '.', 'x', '0', 'a'}
	var gen func(string, int)
	gen = func(s string, n int) {
		hosts = append(hosts, s)
		if n == 0 {
			return
		}
		for _, c := range alpha {
			gen(s+string(c), n-1)
		}
	}
	gen("", 5)
	for _, h := range hosts {
		if got, want := ipv4(h), splitIPv4(h); got != want {
			t.Errorf("ipv4(%q) = %v, want %v", h, got, want)
		}
		if got, want := endsInNumber(h), splitEndsInNumber(h); got != want {
			t.Errorf("endsInNumber(%q) = %v, want %v", h, got, want)
		}
	}
}
