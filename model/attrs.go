package model

import (
	"encoding/binary"
	"math"
	"sort"
	"strconv"
	"unsafe"
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
	// ValEmpty is an AnyValue with no value set, which OTLP 1.9 defines
	// as an empty value (not an empty string). Kept as empty text.
	ValEmpty
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
//
// It is one pointer to the packed bytes, which its length (a uvarint)
// precedes: a Span, which holds one, is 64 bytes and not 72 as with a
// string's pointer and length. Attrs are not comparable: Text gives the
// bytes to compare, sameAttrs tells one shared set.
type Attrs struct {
	_ [0]func()
	p *byte
}

// packAttrs returns a copy of packed as Attrs.
func packAttrs(packed []byte) Attrs {
	if len(packed) == 0 {
		return Attrs{}
	}
	b := binary.AppendUvarint(make([]byte, 0, binary.MaxVarintLen64+len(packed)), uint64(len(packed)))
	b = append(b, packed...)
	return Attrs{p: &b[0]}
}

// Empty reports whether a holds no attributes.
func (a Attrs) Empty() bool { return a.p == nil }

// Text returns the packed bytes. They are a's own (no copy): immutable, and
// kept alive by what is kept of them.
func (a Attrs) Text() string {
	if a.p == nil {
		return ""
	}
	var n uint64
	var shift uint
	for i := 0; ; i++ {
		c := *(*byte)(unsafe.Add(unsafe.Pointer(a.p), i))
		n |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return unsafe.String((*byte)(unsafe.Add(unsafe.Pointer(a.p), i+1)), int(n))
		}
		shift += 7
	}
}

// Size is the length of the packed bytes.
func (a Attrs) Size() int { return len(a.Text()) }

// Each calls fn for every attribute in order until fn returns false.
func (a Attrs) Each(t *Interner, fn func(key string, v Value) bool) {
	a.each(t, func(k Str, v Value) bool { return fn(t.Str(k), v) })
}

func (a Attrs) each(t *Interner, fn func(k Str, v Value) bool) {
	a.eachOf(t, nil, fn)
}

// eachOf is each restricted to the keys want accepts (all when want is
// nil); other values are skipped without being decoded.
func (a Attrs) eachOf(t *Interner, want func(Str) bool, fn func(k Str, v Value) bool) {
	// Walk the string itself: inline values are substrings of a, so reading
	// attributes allocates nothing (a is immutable, so sharing is safe).
	s := a.Text()
	for len(s) > 0 {
		k, n := uvarintStr(s)
		if n <= 0 || n >= len(s) {
			return
		}
		s = s[n:]
		kind := s[0]
		s = s[1:]
		var v Value
		v.Kind = ValueKind(kind &^ valStrInline)
		if want != nil && !want(Str(k)) {
			skip := 0
			switch {
			case kind&valStrInline != 0:
				l, n := uvarintStr(s)
				if n <= 0 || uint64(len(s)-n) < l {
					return
				}
				skip = n + int(l)
			case v.Kind == ValBool:
				skip = 1
			case v.Kind == ValDouble:
				skip = 8
			default: // varints: ints and interned ids
				_, skip = uvarintStr(s)
			}
			if skip <= 0 || skip > len(s) {
				return
			}
			s = s[skip:]
			continue
		}
		switch {
		case kind&valStrInline != 0:
			l, n := uvarintStr(s)
			if n <= 0 || uint64(len(s)-n) < l {
				return
			}
			v.Str = s[n : n+int(l)]
			s = s[n+int(l):]
		case v.Kind == ValBool:
			if len(s) < 1 {
				return
			}
			v.Bool = s[0] != 0
			s = s[1:]
		case v.Kind == ValInt:
			x, n := uvarintStr(s)
			if n <= 0 {
				return
			}
			v.Int = int64(x>>1) ^ -int64(x&1) // zig-zag, as binary.AppendVarint writes it
			s = s[n:]
		case v.Kind == ValDouble:
			if len(s) < 8 {
				return
			}
			v.Float = math.Float64frombits(binary.LittleEndian.Uint64([]byte(s[:8])))
			s = s[8:]
		default:
			id, n := uvarintStr(s)
			if n <= 0 {
				return
			}
			v.Str = t.Str(Str(id))
			s = s[n:]
		}
		if !fn(Str(k), v) {
			return
		}
	}
}

// uvarintStr is binary.Uvarint over a string, so packed attributes are read
// without converting them to a byte slice.
func uvarintStr(s string) (uint64, int) {
	var x uint64
	var shift uint
	for i := 0; i < len(s) && i < binary.MaxVarintLen64; i++ {
		c := s[i]
		if c < 0x80 {
			if i == binary.MaxVarintLen64-1 && c > 1 {
				return 0, -(i + 1) // overflow
			}
			return x | uint64(c)<<shift, i + 1
		}
		x |= uint64(c&0x7f) << shift
		shift += 7
	}
	return 0, 0
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
	// arena is spare room that Attrs carves its copies from, so a decoder
	// packing thousands of spans makes one allocation per arena instead of
	// one per span: fewer, pointer-free objects for the collector. Bytes
	// once handed out are never written again.
	arena []byte
	// copies counts Attrs calls, so a builder used once (a resource, a test
	// fixture) never allocates an arena.
	copies int
	// recent maps attribute sets packed lately to their copy, so spans with
	// equal attributes (most spans of one route or one operation) share
	// one copy. Bounded: cleared when full.
	recent map[string]Attrs
}

// Arena sizes: the first arena is small; later ones reach arenaMax. Values
// larger than arenaLarge get their own allocation.
const (
	arenaMin   = 1 << 10
	arenaMax   = 16 << 10
	arenaLarge = 1 << 10
	// recentMax bounds the shared attribute sets a builder remembers.
	recentMax = 1024
)

// Reset empties the builder, keeping its buffer.
func (b *AttrBuilder) Reset() { b.buf = b.buf[:0]; b.n = 0 }

// Count returns the number of attributes added since Reset.
func (b *AttrBuilder) Count() int { return b.n }

// Mark returns the builder's position, for Since.
func (b *AttrBuilder) Mark() int { return len(b.buf) }

// Since returns the packed bytes of the attributes added after mark m. They
// alias the builder's buffer: copy them before the next Reset.
func (b *AttrBuilder) Since(m int) []byte { return b.buf[m:] }

// AppendPacked adds one attribute in its packed form, as Since returned it
// for a builder bound to the same Interner.
func (b *AttrBuilder) AppendPacked(p []byte) {
	b.buf = append(b.buf, p...)
	b.n++
}

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
func (b *AttrBuilder) Attrs() Attrs {
	b.copies++
	if len(b.buf) == 0 {
		return Attrs{}
	}
	if b.copies == 1 || len(b.buf) > arenaLarge {
		return packAttrs(b.buf)
	}
	if a, ok := b.recent[string(b.buf)]; ok {
		return a
	}
	if need := binary.MaxVarintLen64 + len(b.buf); cap(b.arena)-len(b.arena) < need {
		size := arenaMin
		if c := cap(b.arena); c > 0 {
			size = min(2*c, arenaMax)
		}
		b.arena = make([]byte, 0, max(size, need))
	}
	start := len(b.arena)
	b.arena = binary.AppendUvarint(b.arena, uint64(len(b.buf)))
	b.arena = append(b.arena, b.buf...)
	a := Attrs{p: &b.arena[start]}
	if b.recent == nil || len(b.recent) >= recentMax {
		if b.recent == nil {
			b.recent = make(map[string]Attrs, recentMax)
		}
		clear(b.recent)
	}
	b.recent[a.Text()] = a
	return a
}

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
	return packAttrs(out)
}
