package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"

	"bailiff/chain"
	"bailiff/engine"
)

// Cache holds what the sessions of one log share when read back: the
// evidence store and the policies loaded so far, by version (a long log
// has many sessions under one policy). It is safe for concurrent use.
type Cache struct {
	ev       chain.EvidenceStore
	mu       sync.Mutex
	policies map[string]*policyEntry
	texts    *Texts
}

// Texts caches evidence text by digest for one or more logs' caches:
// content is addressed by its hash, so one read serves every result that
// shares it. The logs read together share one bound, so a hundred logs
// keep no more than one; an entry is still only ever its own log's, since
// one log's store must not answer for another's missing evidence.
type Texts struct {
	mu    sync.Mutex
	texts map[textKey]string
	bytes int
}

type textKey struct {
	owner  *Cache
	digest string
}

// NewTexts is an empty text cache to share among the caches of logs read
// together.
func NewTexts() *Texts { return &Texts{} }

// maxCachedText bounds the evidence text kept in memory, and
// maxCachedOne the text of one output worth keeping: the outputs that
// repeat are short ("Message sent"), and a large one kept would be
// memory a large session needs.
const (
	maxCachedText = 8 << 20
	maxCachedOne  = 64 << 10
)

// Evidence is the output text of the evidence stored under digest.
func (v *Cache) Evidence(digest string) (string, error) {
	key := textKey{v, digest}
	t := v.texts
	t.mu.Lock()
	text, ok := t.texts[key]
	t.mu.Unlock()
	if ok {
		return text, nil
	}
	data, err := v.ev.Get(digest)
	if err != nil {
		return "", err
	}
	if text, err = engine.OutputFromJSON(data); err != nil {
		return "", fmt.Errorf("evidence %s is not a tool result: %v", digest, err)
	}
	if len(text) > maxCachedOne {
		return text, nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.bytes+len(text) > maxCachedText {
		t.texts, t.bytes = map[textKey]string{}, 0
	}
	if t.texts == nil {
		t.texts = map[textKey]string{}
	}
	t.texts[key] = text
	t.bytes += len(text)
	return text, nil
}

type policyEntry struct {
	p   *engine.Policy
	err string
}

// NewCache is an empty cache over the evidence store ev.
func NewCache(ev chain.EvidenceStore) *Cache { return NewSharedCache(ev, NewTexts()) }

// NewSharedCache is an empty cache over ev whose evidence text is kept in
// texts, with the other logs read at once.
func NewSharedCache(ev chain.EvidenceStore, texts *Texts) *Cache {
	return &Cache{ev: ev, policies: map[string]*policyEntry{}, texts: texts}
}

// Policy loads the embedded policy text of a session record, once per
// version; problem says why it cannot be used (edited, does not load, not
// canonical).
func (v *Cache) Policy(text, version string) (p *engine.Policy, problem string) {
	sum := sha256.Sum256([]byte(text))
	if got := "sha256:" + hex.EncodeToString(sum[:]); got != version {
		return nil, fmt.Sprintf("the embedded policy text hashes to %s, not its recorded version %s: it was edited", shortHex(got), shortHex(version))
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if e, ok := v.policies[version]; ok {
		return e.p, e.err
	}
	e := &policyEntry{}
	p, err := engine.Load("embedded policy", []byte(text))
	switch {
	case err != nil:
		e.err = fmt.Sprintf("the embedded policy does not load: %v", err)
	case !bytes.Equal(p.Canonical(), []byte(text)):
		e.err = "the embedded policy is not in canonical form"
	default:
		e.p = p
	}
	v.policies[version] = e
	return e.p, e.err
}

func shortHex(s string) string {
	if len(s) > 19 {
		return s[:19]
	}
	return s
}

// checkChannel holds a result of another channel than tools/call to its
// form: no call, and its channel as its tool. The tool is the provenance
// trusted_sources match, so a record naming a trusted tool for a log
// message or a resource would make its text silently trusted.
func checkChannel(b ResultBody) error {
	switch {
	case b.Channel == "":
		return nil
	case b.Channel == "tools/call":
		return errors.New(`channel "tools/call" is written as no channel`)
	case b.Call != "":
		return fmt.Errorf("a %s output answers no call, but names call %q", b.Channel, b.Call)
	case b.Tool != b.Channel:
		return fmt.Errorf("a %s output's tool must be its channel, not %q", b.Channel, b.Tool)
	case b.Status == StatusError:
		return fmt.Errorf("a %s output is ok or failed; error is a tool's isError", b.Channel)
	}
	return nil
}
