package model

import (
	"sync"
	"sync/atomic"
)

// StringsFullName is what a name reads as when the string table was full
// (Options.MaxStringBytes) as it arrived.
const StringsFullName = "(name dropped: string table full)"

// Str is an interned string: an index into the Interner. 0 is "".
type Str uint32

// ResourceID is an interned resource (one emitting process). 0 is the empty
// resource. Two bytes keep a Span at 64: a job has a process or a few per
// server, and past MaxResources every new resource reads as one
// (ResourcesFullName).
type ResourceID uint16

// MaxResources bounds the resource table; the last id is the full table's.
const MaxResources = 1<<16 - 1

// ResourcesFullName is the service name of spans whose resource arrived
// when the resource table was full.
const ResourcesFullName = "(resource dropped: resource table full)"

// Resource is one process's resource: its attributes and its service.name.
type Resource struct {
	Attrs   Attrs
	Service Str
}

const (
	chunkBits = 12
	chunkSize = 1 << chunkBits
	// maxChunks bounds the table at 64M strings, far past what the per-key
	// cardinality cap lets through, while the fixed chunk index stays 128 KiB.
	maxChunks = 1 << 14
	// inlineLen: longer values are stored inline; they rarely repeat.
	inlineLen = 96
	// keyCardinality: a key with more distinct values than this stores its
	// values inline from then on, so unique values (urls with ids, messages)
	// cannot grow the interner without bound.
	keyCardinality = 4096
)

// Interner maps strings and resources to small ids. It is safe for concurrent
// use: lookups of an id (Str, Resource) take no lock, and the tables are
// append-only, so an id once handed out stays valid for the process lifetime.
type Interner struct {
	mu     sync.Mutex
	ids    map[string]Str
	n      atomic.Uint32
	chunks [maxChunks]atomic.Pointer[[chunkSize]string]
	card   map[Str]uint32 // distinct interned values per attribute key
	hot    map[Str]bool   // keys whose values are stored inline
	// limit bounds bytes (the interned text); 0 is no bound. Past it new
	// names read as StringsFullName and new values stay inline, counted
	// in dropped: the table never shrinks (an id, once handed out, is
	// valid for good), so it must not grow with unique names for ever.
	limit   int64
	bytes   atomic.Int64
	dropped atomic.Int64
	full    Str

	resMu  sync.Mutex
	resIDs map[string]ResourceID // by packed attributes (Attrs.Text)
	res    atomic.Pointer[[]Resource]
}

// NewInterner returns an interner holding "" as Str 0 and the empty resource.
func NewInterner() *Interner {
	t := &Interner{ids: map[string]Str{"": 0}, card: map[Str]uint32{}, hot: map[Str]bool{}, resIDs: map[string]ResourceID{"": 0}}
	t.chunks[0].Store(new([chunkSize]string))
	t.n.Store(1)
	res := []Resource{{}}
	t.res.Store(&res)
	return t
}

// Str returns the text of id. Ids not handed out by this interner give "".
func (t *Interner) Str(id Str) string {
	if uint32(id) >= t.n.Load() {
		return ""
	}
	c := t.chunks[id>>chunkBits].Load()
	return c[id&(chunkSize-1)]
}

// Len returns the number of interned strings.
func (t *Interner) Len() int { return int(t.n.Load()) }

// Intern returns the id of s, adding it if new.
func (t *Interner) Intern(s string) Str {
	t.mu.Lock()
	id := t.internLocked(s)
	t.mu.Unlock()
	return id
}

func (t *Interner) internLocked(s string) Str {
	if id, ok := t.ids[s]; ok {
		return id
	}
	n := t.n.Load()
	if n>>chunkBits >= maxChunks {
		return 0 // full: the string reads as ""; values are stored inline instead
	}
	if t.limit > 0 && t.bytes.Load()+int64(len(s)) > t.limit {
		if t.full == 0 {
			t.full = t.add(StringsFullName, n)
		}
		t.dropped.Add(1)
		return t.full
	}
	return t.add(s, n)
}

// add appends s as id n.
func (t *Interner) add(s string, n uint32) Str {
	c := t.chunks[n>>chunkBits].Load()
	if c == nil {
		c = new([chunkSize]string)
		t.chunks[n>>chunkBits].Store(c)
	}
	c[n&(chunkSize-1)] = s
	t.ids[s] = Str(n)
	t.bytes.Add(int64(len(s)))
	t.n.Store(n + 1) // publishes c[n] to lock-free readers
	return Str(n)
}

// value interns v as a value of key k unless it should be stored inline.
func (t *Interner) value(k Str, v []byte) (Str, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if id, ok := t.ids[string(v)]; ok {
		return id, true
	}
	if t.hot[k] || t.n.Load()>>chunkBits >= maxChunks {
		return 0, false
	}
	if t.limit > 0 && t.bytes.Load()+int64(len(v)) > t.limit {
		t.dropped.Add(1)
		return 0, false // kept inline
	}
	t.card[k]++
	if t.card[k] > keyCardinality {
		t.hot[k] = true
		delete(t.card, k)
		return 0, false
	}
	return t.internLocked(string(v)), true
}

// InternResource returns the id of the resource with the given attributes
// (packed with AttrBuilder.Sorted, so order does not matter) and service name.
func (t *Interner) InternResource(attrs Attrs, service Str) ResourceID {
	t.resMu.Lock()
	defer t.resMu.Unlock()
	if id, ok := t.resIDs[attrs.Text()]; ok {
		return id
	}
	// Appending in place is safe: a reader's slice ends before the new
	// element, and the Store publishes it. A copy per resource would make
	// the table quadratic.
	old := *t.res.Load()
	if len(old) >= MaxResources {
		if len(old) == MaxResources {
			// Once: the full table's resource, outside resIDs.
			next := append(old, Resource{Service: t.Intern(ResourcesFullName)})
			t.res.Store(&next)
		}
		return MaxResources
	}
	next := append(old, Resource{Attrs: attrs, Service: service})
	id := ResourceID(len(old))
	t.resIDs[attrs.Text()] = id
	t.res.Store(&next)
	return id
}

// LookupResource returns the id of the resource with the given attributes
// when it is interned, without adding it.
func (t *Interner) LookupResource(attrs Attrs) (ResourceID, bool) {
	t.resMu.Lock()
	defer t.resMu.Unlock()
	id, ok := t.resIDs[attrs.Text()]
	return id, ok
}

// Resource returns the resource with the given id.
func (t *Interner) Resource(id ResourceID) Resource {
	res := *t.res.Load()
	if int(id) < len(res) {
		return res[id]
	}
	return Resource{}
}

// Resources returns every interned resource, indexed by ResourceID.
func (t *Interner) Resources() []Resource { return *t.res.Load() }

// Local is a per-goroutine cache in front of an Interner, so the hot decode
// path is one map lookup with no lock. Not safe for concurrent use.
type Local struct {
	t      *Interner
	m      map[string]Str
	inline map[Str]bool
	// recent is a small direct-mapped cache in front of m, indexed by the
	// length and end bytes of a string. Spans of one request repeat the same
	// keys and values in the same order, so most lookups end with one
	// comparison instead of hashing the whole string.
	recent [recentSlots]localEntry
}

type localEntry struct {
	s  string // interned text (no copy of the caller's bytes)
	id Str
}

const recentSlots = 512

func recentSlot(b []byte) int {
	n := len(b)
	if n == 0 {
		return 0
	}
	return (n*131 + int(b[0])*31 + int(b[n/2])*7 + int(b[n-1])) & (recentSlots - 1)
}

// NewLocal returns a cache in front of t.
func NewLocal(t *Interner) *Local {
	return &Local{t: t, m: make(map[string]Str, 256), inline: map[Str]bool{}}
}

// Interner returns the interner behind the cache.
func (l *Local) Interner() *Interner { return l.t }

// Intern returns the id of b, adding it if new. Used for keys and names.
func (l *Local) Intern(b []byte) Str {
	e := &l.recent[recentSlot(b)]
	if e.s == string(b) {
		return e.id
	}
	id, ok := l.m[string(b)]
	if !ok {
		l.trim()
		id = l.t.Intern(string(b))
		l.m[string(b)] = id
	}
	e.s, e.id = l.t.Str(id), id
	return id
}

// Value returns the id for a value of key k, or false when it should be
// stored inline (too long, or k has too many distinct values).
func (l *Local) Value(k Str, v []byte) (Str, bool) {
	e := &l.recent[recentSlot(v)]
	if e.s == string(v) {
		return e.id, true
	}
	if id, ok := l.m[string(v)]; ok {
		e.s, e.id = l.t.Str(id), id
		return id, true
	}
	if len(v) > inlineLen || l.inline[k] {
		return 0, false
	}
	id, ok := l.t.value(k, v)
	if !ok {
		l.inline[k] = true
		return 0, false
	}
	l.trim()
	l.m[string(v)] = id
	return id, true
}

func (l *Local) trim() {
	if len(l.m) >= 1<<16 {
		clear(l.m)
	}
}
