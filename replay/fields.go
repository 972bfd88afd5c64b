package replay

import (
	"fmt"
	"strings"
	"time"
)

// fields reads typed values out of a decoded event body.
type fields struct {
	kind string
	m    map[string]any
}

func (f fields) only(keys ...string) error {
	for k := range f.m {
		ok := false
		for _, want := range keys {
			ok = ok || k == want
		}
		if !ok {
			return fmt.Errorf("%s: unknown key %q (known: %s)", f.kind, k, strings.Join(keys, ", "))
		}
	}
	return nil
}

func (f fields) str(key string, required bool) (string, error) {
	v, ok := f.m[key]
	if !ok {
		if required {
			return "", fmt.Errorf("%s needs %q", f.kind, key)
		}
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%s.%s must be a string", f.kind, key)
	}
	if required && s == "" {
		return "", fmt.Errorf("%s.%s must not be empty", f.kind, key)
	}
	return s, nil
}

func (f fields) strs(key string) ([]string, error) {
	v, ok := f.m[key]
	if !ok {
		return nil, nil
	}
	l, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%s.%s must be a list of strings", f.kind, key)
	}
	out := make([]string, 0, len(l))
	for _, e := range l {
		s, ok := e.(string)
		if !ok {
			return nil, fmt.Errorf("%s.%s must be a list of strings", f.kind, key)
		}
		out = append(out, s)
	}
	return out, nil
}

func (f fields) boolean(key string) (bool, error) {
	v, ok := f.m[key]
	if !ok {
		return false, nil
	}
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("%s.%s must be true or false", f.kind, key)
	}
	return b, nil
}

func (f fields) time(key string) (time.Time, error) {
	s, err := f.str(key, false)
	if err != nil || s == "" {
		return time.Time{}, err
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s.%s: %q is not an RFC 3339 time", f.kind, key, s)
	}
	return t.UTC(), nil
}
