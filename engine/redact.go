package engine

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
)

// Version names the decision semantics of this engine. It is written into
// every audit session, so a reviewer can tell which engine decided it.
const Version = "bailiff-engine/1"

// Redact returns a copy of args with the values at the given paths
// removed, and the paths that were actually present (so removed), in the
// order given. args itself is not changed. A path into a list keeps the
// list's length: the element becomes null, so later indexes still mean
// what they meant.
func Redact(args map[string]any, paths []Path) (map[string]any, []Path) {
	var removed []Path
	out := args
	for _, p := range paths {
		if _, ok := p.lookup(out); !ok || len(p.segs) == 0 {
			continue
		}
		if len(removed) == 0 {
			out = deepCopy(args).(map[string]any)
		}
		removeAt(out, p.segs)
		removed = append(removed, p)
	}
	return out, removed
}

func removeAt(v any, segs []seg) {
	for i, s := range segs {
		last := i == len(segs)-1
		if s.idx < 0 {
			m := v.(map[string]any)
			if last {
				delete(m, s.key)
				return
			}
			v = m[s.key]
		} else {
			l := v.([]any)
			if last {
				l[s.idx] = nil
				return
			}
			v = l[s.idx]
		}
	}
}

func deepCopy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		l := make([]any, len(v))
		for i, e := range v {
			l[i] = deepCopy(e)
		}
		return l
	}
	return v
}

// ArgsHMAC is the digest grants bind to when arguments were redacted
// before being written down: HMAC-SHA-256 under a deployment secret over
// the canonical unredacted arguments, as "hmac-sha256:<hex>". Without the
// secret a redacted value cannot be confirmed by guessing it.
func ArgsHMAC(secret []byte, args map[string]any) string {
	m := hmac.New(sha256.New, secret)
	m.Write(CanonicalJSON(args))
	return "hmac-sha256:" + hex.EncodeToString(m.Sum(nil))
}
