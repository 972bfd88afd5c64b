package jsontext

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// ExactFieldCase refuses JSON text that Go would decode into v's type by
// a key spelled unlike the field's name: encoding/json matches struct
// fields without regard to case (and folds 'ſ' to 's', the Kelvin sign
// to 'k'), so {"answer":"decline","ANSWER":"approve"} is two keys to
// every other reader and one field, the last, to Go. Keys no field
// folds to are left to the decoder (ignored, or refused as unknown).
// v is a pointer to the value the caller decodes into, and is not
// written.
func ExactFieldCase(raw []byte, v any) error {
	var tree any
	if json.Unmarshal(raw, &tree) != nil {
		return nil // not JSON: the caller's decoder says what is wrong
	}
	return fieldCase(tree, reflect.TypeOf(v), "", 0)
}

func fieldCase(node any, t reflect.Type, at string, depth int) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || depth > maxDepth {
		return nil
	}
	switch n := node.(type) {
	case map[string]any:
		switch t.Kind() {
		case reflect.Map:
			for k, e := range n {
				if err := fieldCase(e, t.Elem(), at+"."+k, depth+1); err != nil {
					return err
				}
			}
		case reflect.Struct:
			return structCase(n, t, at, depth)
		}
	case []any:
		if t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
			for i, e := range n {
				if err := fieldCase(e, t.Elem(), fmt.Sprintf("%s[%d]", at, i), depth+1); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// structCase checks the keys of object n against the fields of struct t.
func structCase(n map[string]any, t reflect.Type, at string, depth int) error {
	fields := map[string]reflect.Type{}
	jsonFields(t, fields, 0)
	for k, e := range n {
		if ft, ok := fields[k]; ok {
			if err := fieldCase(e, ft, at+"."+k, depth+1); err != nil {
				return err
			}
			continue
		}
		for name := range fields {
			if strings.EqualFold(k, name) {
				return fmt.Errorf("key %q%s is %q spelled in another case, which Go reads as that field and other readers do not", k, where(at), name)
			}
		}
	}
	return nil
}

// jsonFields adds the JSON keys of struct t to fields, as encoding/json
// names them: an embedded struct with no name of its own gives its fields
// to the outer struct (a call's server and tool come from an embedded
// tool reference), and a field of the outer struct hides a promoted one
// of the same name.
func jsonFields(t reflect.Type, fields map[string]reflect.Type, depth int) {
	var embedded []reflect.Type
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if f.Anonymous && name == "" && ft.Kind() == reflect.Struct {
			embedded = append(embedded, ft)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fields[name] = f.Type
	}
	if depth > maxDepth {
		return
	}
	for _, et := range embedded {
		inner := map[string]reflect.Type{}
		jsonFields(et, inner, depth+1)
		for name, ft := range inner {
			if _, hidden := fields[name]; !hidden {
				fields[name] = ft
			}
		}
	}
}

func where(at string) string {
	if at == "" {
		return ""
	}
	return " in " + strings.TrimPrefix(at, ".")
}
