package model

import (
	"encoding/binary"
	"math"
)

// Lookup returns the id of s when s is interned, without adding it. A key
// that is not interned is on no stored span: readers that look attributes
// up by id resolve their keys once and skip the spans' key texts.
func (t *Interner) Lookup(s string) (Str, bool) {
	t.mu.Lock()
	id, ok := t.ids[s]
	t.mu.Unlock()
	return id, ok
}

// AttrIter walks packed attributes by key id: a value is decoded only when
// Value asks for it, so finding a few keys among many costs a varint read
// per attribute, not a string comparison and a decode.
type AttrIter struct {
	rest string
	raw  string // the current value's bytes
	key  Str
	kind byte
}

// Iter returns an iterator over a, positioned before the first attribute.
func (a Attrs) Iter() AttrIter { return AttrIter{rest: a.Text()} }

// Next moves to the next attribute; false at the end or on malformed bytes.
func (it *AttrIter) Next() bool {
	s := it.rest
	k, n := uvarintStr(s)
	if n <= 0 || n >= len(s) {
		it.rest = ""
		return false
	}
	kind := s[n]
	s = s[n+1:]
	size := 0
	switch {
	case kind&valStrInline != 0:
		l, m := uvarintStr(s)
		if m <= 0 || uint64(len(s)-m) < l {
			it.rest = ""
			return false
		}
		size = m + int(l)
	case ValueKind(kind) == ValBool:
		size = 1
	case ValueKind(kind) == ValDouble:
		size = 8
	default: // varints: ints and interned ids
		_, size = uvarintStr(s)
	}
	if size <= 0 || size > len(s) {
		it.rest = ""
		return false
	}
	it.key, it.kind, it.raw, it.rest = Str(k), kind, s[:size], s[size:]
	return true
}

// Key returns the current attribute's key id.
func (it *AttrIter) Key() Str { return it.key }

// Value decodes the current attribute's value, as Each gives it.
func (it *AttrIter) Value(t *Interner) Value {
	s := it.raw
	v := Value{Kind: ValueKind(it.kind &^ valStrInline)}
	switch {
	case it.kind&valStrInline != 0:
		_, n := uvarintStr(s)
		v.Str = s[n:]
	case v.Kind == ValBool:
		v.Bool = s[0] != 0
	case v.Kind == ValInt:
		x, _ := uvarintStr(s)
		v.Int = int64(x>>1) ^ -int64(x&1)
	case v.Kind == ValDouble:
		v.Float = math.Float64frombits(binary.LittleEndian.Uint64([]byte(s)))
	default:
		id, _ := uvarintStr(s)
		v.Str = t.Str(Str(id))
	}
	return v
}

// GetKey is Get by key id: the first value of key, if present.
func (a Attrs) GetKey(t *Interner, key Str) (Value, bool) {
	it := a.Iter()
	for it.Next() {
		if it.key == key {
			return it.Value(t), true
		}
	}
	return Value{}, false
}

// HasKey reports whether a holds key, decoding nothing.
func (a Attrs) HasKey(key Str) bool {
	it := a.Iter()
	for it.Next() {
		if it.key == key {
			return true
		}
	}
	return false
}
