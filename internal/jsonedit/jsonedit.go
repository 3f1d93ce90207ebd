// Package jsonedit changes the top-level keys of a JSON object and keeps
// every other byte: what a gateway needs to pass a client's request body to
// a provider of the same dialect with only the fields it owns replaced
// (model, stream), whatever else the body holds, known or not.
package jsonedit

import (
	"bytes"
	"encoding/json"
	"slices"
	"unsafe"

	"github.com/detourhq/detour/internal/jsonscan"
)

// Field is one key of an object with its value, raw JSON. Key must need no
// escaping (the keys of the APIs detour speaks never do).
type Field struct {
	Key   string
	Value []byte
}

// Object appends to dst the JSON object body with the keys of drop and of
// set left out where they stand, and each field of set written at the end,
// in order. The other members keep their bytes and their order. ok is false
// when body is not one valid JSON object; dst is then returned as it came.
// A body whose keys the fast scanner cannot read (escapes, non-ASCII, deep
// nesting) is read with encoding/json instead: its members then come in
// the order of their keys, JSON-equal to the input.
func Object(dst, body []byte, drop []string, set ...Field) ([]byte, bool) {
	s := unsafe.String(unsafe.SliceData(body), len(body)) // read here only: nothing keeps it
	p := jsonscan.Scanner{S: s}
	start := len(dst)
	dst = append(dst, '{')
	n := 0
	owned := func(k string) bool {
		if slices.Contains(drop, k) {
			return true
		}
		for _, f := range set {
			if f.Key == k {
				return true
			}
		}
		return false
	}
	ok := p.Object(func(k string) bool {
		p.WS()
		from := p.I
		if !p.SkipValue() {
			return false
		}
		if owned(k) {
			return true
		}
		if n > 0 {
			dst = append(dst, ',')
		}
		n++
		dst = appendPlainKey(dst, k) // the fast scanner reads no key that needs escaping
		dst = append(dst, s[from:p.I]...)
		return true
	}) && p.End()
	if !ok {
		return slowObject(dst[:start], body, owned, set)
	}
	return appendFields(dst, n, set), true
}

// slowObject is Object through encoding/json.
func slowObject(dst, body []byte, owned func(string) bool, set []Field) ([]byte, bool) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil || m == nil {
		return dst, false
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		if !owned(k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	dst = append(dst, '{')
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendKey(dst, k)
		dst = append(dst, bytes.TrimSpace(m[k])...)
	}
	return appendFields(dst, len(keys), set), true
}

// appendFields writes set after n members already written, and closes the
// object.
func appendFields(dst []byte, n int, set []Field) []byte {
	for _, f := range set {
		if n > 0 {
			dst = append(dst, ',')
		}
		n++
		dst = appendPlainKey(dst, f.Key)
		dst = append(dst, f.Value...)
	}
	return append(dst, '}')
}

// appendPlainKey writes "k": for a key that needs no escaping.
func appendPlainKey(dst []byte, k string) []byte {
	dst = append(dst, '"')
	dst = append(dst, k...)
	return append(dst, '"', ':')
}

// appendKey writes "k": with k escaped as JSON needs.
func appendKey(dst []byte, k string) []byte {
	b, _ := json.Marshal(k) // a string always marshals
	dst = append(dst, b...)
	return append(dst, ':')
}

// Value returns the raw value of key in the JSON object body (the last,
// when the key repeats), and whether it is there.
func Value(body []byte, key string) ([]byte, bool) {
	s := unsafe.String(unsafe.SliceData(body), len(body)) // read here only: nothing keeps it
	p := jsonscan.Scanner{S: s}
	var out []byte
	found := false
	ok := p.Object(func(k string) bool {
		p.WS()
		from := p.I
		if !p.SkipValue() {
			return false
		}
		if k == key {
			out, found = []byte(s[from:p.I]), true
		}
		return true
	})
	if ok {
		return out, found
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return nil, false
	}
	v, found := m[key]
	return bytes.TrimSpace(v), found
}
