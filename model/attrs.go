package model

import (
	"encoding/binary"
	"math"
	"sort"
	"strconv"
)

// ValueKind is the type of an attribute value.
type ValueKind uint8

// Value kinds. Arrays, maps and bytes are kept as their rendered text.
const (
	ValString ValueKind = iota
	ValBool
	ValInt
	ValDouble
	ValArray
	ValMap
	ValBytes
	valStrInline = 0x80 // wire flag: string bytes follow instead of an interned id
)

// Value is one decoded attribute value.
type Value struct {
	Kind  ValueKind
	Str   string // ValString, and the rendered text of ValArray, ValMap, ValBytes
	Int   int64
	Float float64
	Bool  bool
}

// String renders the value as a user would type it.
func (v Value) String() string {
	switch v.Kind {
	case ValBool:
		return strconv.FormatBool(v.Bool)
	case ValInt:
		return strconv.FormatInt(v.Int, 10)
	case ValDouble:
		return strconv.FormatFloat(v.Float, 'g', -1, 64)
	}
	return v.Str
}

// Attrs is a packed, immutable list of attributes: per entry the interned key,
// a kind byte and the value (an interned id for repeating strings, inline bytes
// for long or high-cardinality ones, varints for integers). Decode it with
// Each or Get against the Interner that built it. The zero value is empty.
type Attrs string

// Each calls fn for every attribute in order until fn returns false.
func (a Attrs) Each(t *Interner, fn func(key string, v Value) bool) {
	a.each(t, func(k Str, v Value) bool { return fn(t.Str(k), v) })
}

func (a Attrs) each(t *Interner, fn func(k Str, v Value) bool) {
	b := []byte(a)
	for len(b) > 0 {
		k, n := binary.Uvarint(b)
		if n <= 0 || n >= len(b) {
			return
		}
		b = b[n:]
		kind := b[0]
		b = b[1:]
		var v Value
		v.Kind = ValueKind(kind &^ valStrInline)
		switch {
		case kind&valStrInline != 0:
			l, n := binary.Uvarint(b)
			if n <= 0 || uint64(len(b)-n) < l {
				return
			}
			v.Str = string(b[n : n+int(l)])
			b = b[n+int(l):]
		case v.Kind == ValBool:
			if len(b) < 1 {
				return
			}
			v.Bool = b[0] != 0
			b = b[1:]
		case v.Kind == ValInt:
			x, n := binary.Varint(b)
			if n <= 0 {
				return
			}
			v.Int = x
			b = b[n:]
		case v.Kind == ValDouble:
			if len(b) < 8 {
				return
			}
			v.Float = math.Float64frombits(binary.LittleEndian.Uint64(b))
			b = b[8:]
		default:
			id, n := binary.Uvarint(b)
			if n <= 0 {
				return
			}
			v.Str = t.Str(Str(id))
			b = b[n:]
		}
		if !fn(Str(k), v) {
			return
		}
	}
}

// Get returns the value of key, if present.
func (a Attrs) Get(t *Interner, key string) (Value, bool) {
	var out Value
	found := false
	a.Each(t, func(k string, v Value) bool {
		if k == key {
			out, found = v, true
			return false
		}
		return true
	})
	return out, found
}

// Len returns the number of attributes.
func (a Attrs) Len(t *Interner) int {
	n := 0
	a.each(t, func(Str, Value) bool { n++; return true })
	return n
}

// AttrBuilder packs attributes. It is not safe for concurrent use; decoders
// keep one each and Reset it per span.
type AttrBuilder struct {
	buf []byte
	n   int
}

// Reset empties the builder, keeping its buffer.
func (b *AttrBuilder) Reset() { b.buf = b.buf[:0]; b.n = 0 }

// Count returns the number of attributes added since Reset.
func (b *AttrBuilder) Count() int { return b.n }

func (b *AttrBuilder) key(k Str, kind byte) {
	b.buf = binary.AppendUvarint(b.buf, uint64(k))
	b.buf = append(b.buf, kind)
	b.n++
}

// String adds a string attribute; l decides between interning and inlining.
func (b *AttrBuilder) String(l *Local, k Str, v []byte) {
	b.text(l, k, ValString, v)
}

// Text adds an array, map or bytes value by its rendered text.
func (b *AttrBuilder) Text(l *Local, k Str, kind ValueKind, v []byte) {
	b.text(l, k, kind, v)
}

func (b *AttrBuilder) text(l *Local, k Str, kind ValueKind, v []byte) {
	if id, ok := l.Value(k, v); ok {
		b.key(k, byte(kind))
		b.buf = binary.AppendUvarint(b.buf, uint64(id))
		return
	}
	b.key(k, byte(kind)|valStrInline)
	b.buf = binary.AppendUvarint(b.buf, uint64(len(v)))
	b.buf = append(b.buf, v...)
}

// Bool adds a boolean attribute.
func (b *AttrBuilder) Bool(k Str, v bool) {
	b.key(k, byte(ValBool))
	if v {
		b.buf = append(b.buf, 1)
	} else {
		b.buf = append(b.buf, 0)
	}
}

// Int adds an integer attribute.
func (b *AttrBuilder) Int(k Str, v int64) {
	b.key(k, byte(ValInt))
	b.buf = binary.AppendVarint(b.buf, v)
}

// Double adds a floating-point attribute.
func (b *AttrBuilder) Double(k Str, v float64) {
	b.key(k, byte(ValDouble))
	b.buf = binary.LittleEndian.AppendUint64(b.buf, math.Float64bits(v))
}

// Attrs returns the packed attributes (a copy; the builder may be reused).
func (b *AttrBuilder) Attrs() Attrs { return Attrs(b.buf) }

// Sorted returns the packed attributes ordered by key text, so that equal sets
// given in another order pack the same (resources are interned by this form).
func (b *AttrBuilder) Sorted(t *Interner) Attrs {
	type ent struct {
		key string
		raw []byte
	}
	var ents []ent
	rest := b.buf
	for len(rest) > 0 {
		start := rest
		k, n := binary.Uvarint(rest)
		rest = rest[n:]
		kind := rest[0]
		rest = rest[1:]
		skip := 0
		switch {
		case kind&valStrInline != 0:
			l, m := binary.Uvarint(rest)
			skip = m + int(l)
		case ValueKind(kind) == ValBool:
			skip = 1
		case ValueKind(kind) == ValDouble:
			skip = 8
		case ValueKind(kind) == ValInt:
			_, skip = binary.Varint(rest)
		default:
			_, skip = binary.Uvarint(rest)
		}
		rest = rest[skip:]
		ents = append(ents, ent{t.Str(Str(k)), start[:len(start)-len(rest)]})
	}
	sort.SliceStable(ents, func(i, j int) bool { return ents[i].key < ents[j].key })
	out := make([]byte, 0, len(b.buf))
	for _, e := range ents {
		out = append(out, e.raw...)
	}
	return Attrs(out)
}
