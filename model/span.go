package model

import (
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
)

// TraceID is a W3C trace id. The zero value means absent.
type TraceID [16]byte

// SpanID is a W3C span id. The zero value means absent (no parent).
type SpanID [8]byte

// IsZero reports whether the id is absent.
func (t TraceID) IsZero() bool { return t == TraceID{} }

// IsZero reports whether the id is absent.
func (s SpanID) IsZero() bool { return s == SpanID{} }

// String returns the id as 32 lower-case hex digits.
func (t TraceID) String() string { return hex.EncodeToString(t[:]) }

// String returns the id as 16 lower-case hex digits.
func (s SpanID) String() string { return hex.EncodeToString(s[:]) }

// ErrBadID reports an id that is not the right number of hex digits.
var ErrBadID = errors.New("bad id")

// ParseTraceID reads 32 hex digits (an optional 0x prefix is accepted, as the
// Python SDK's console output writes it).
func ParseTraceID(s string) (TraceID, error) {
	var id TraceID
	err := parseHex(id[:], s)
	return id, err
}

// ParseSpanID reads 16 hex digits (an optional 0x prefix is accepted).
func ParseSpanID(s string) (SpanID, error) {
	var id SpanID
	err := parseHex(id[:], s)
	return id, err
}

func parseHex(dst []byte, s string) error {
	if len(s) >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') {
		s = s[2:]
	}
	if len(s) != 2*len(dst) {
		return ErrBadID
	}
	if _, err := hex.Decode(dst, []byte(s)); err != nil {
		return ErrBadID
	}
	return nil
}

// Kind is the OTLP span kind.
type Kind uint8

// Span kinds, numbered as in OTLP.
const (
	KindUnspecified Kind = iota
	KindInternal
	KindServer
	KindClient
	KindProducer
	KindConsumer
)

var kindNames = [...]string{"UNSPECIFIED", "INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER"}

// String returns the kind as OTLP names it without the prefix, e.g. "SERVER".
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "UNSPECIFIED"
}

// StatusCode is the OTLP span status code.
type StatusCode uint8

// Status codes, numbered as in OTLP.
const (
	StatusUnset StatusCode = iota
	StatusOK
	StatusError
)

// String returns "UNSET", "OK" or "ERROR".
func (c StatusCode) String() string {
	switch c {
	case StatusOK:
		return "OK"
	case StatusError:
		return "ERROR"
	}
	return "UNSET"
}

// SpanFlags are per-span markers. A Span keeps them in the top bits of
// its wire size (see Span.Flags): four flags, no room for a fifth.
type SpanFlags uint8

// Span flags.
const (
	// FlagTruncated marks a span force-closed at shutdown (nemo.span.truncated).
	FlagTruncated SpanFlags = 1 << iota
	// FlagAttrsCapped marks a span whose attributes were cut by a bound.
	FlagAttrsCapped
	// FlagException marks a span with an "exception" event.
	FlagException
	// FlagCarried marks a request span whose OTel context was carried over
	// from another rollout's request (a reused keep-alive connection). The
	// analysis sets it on its own copies, where it grafts the span back
	// under the call that made it; stored spans never carry it.
	FlagCarried
)

// wireBits is how many bits of Span.wire hold the wire size; the flags
// take the rest. 2^28 bytes is the longest line a reader accepts
// (receiver.DefaultMaxLine): a span past it, only possible with a raised
// request bound, counts as that many bytes.
const (
	wireBits = 28
	wireMask = 1<<wireBits - 1
)

// Span is one received span in compact form. Strings are interned (Str) and
// attributes are packed (Attrs, one pointer), so a Span holds two pointers
// at most. It has no trace id: every span of a Fragment is of the
// fragment's TraceID, and a Batch carries its spans' beside them
// (Batch.Traces). Nor has it a parent id: in a fragment, a span's parent is
// Spans[Parent] or, for the top, the fragment's TopParent (see
// Fragment.ParentID), and a Batch carries its spans' (Batch.Parents). The
// 8-byte fields come first and the small ones last, and the flags share a
// word with the wire size: 56 bytes, no padding. A Span is immutable once
// submitted; the store only sets Parent.
type Span struct {
	SpanID SpanID
	Start  int64 // unix nanoseconds
	End    int64 // unix nanoseconds
	Attrs  Attrs
	Extra  *Extra // nil for most spans
	Name   Str
	// Parent is the index of the parent span within the same Fragment, or -1
	// when the parent is not in the fragment (a root, a missing parent, or a
	// gym.job span). Set by the store; decoders leave it alone.
	Parent int32
	// wire is the span's encoded OTLP protobuf size in bytes (WireSize) in
	// the low wireBits bits and its SpanFlags above them.
	wire     uint32
	Resource ResourceID
	Kind     Kind
	Status   StatusCode
}

// WireSize returns the span's encoded OTLP protobuf size in bytes, as
// received or as estimated by the decoder; the what-if byte estimate sums it.
func (s *Span) WireSize() uint32 { return s.wire & wireMask }

// SetWireSize sets the wire size, n bytes, at most 2^28-1 (see wireBits).
func (s *Span) SetWireSize(n int) {
	s.wire = s.wire&^wireMask | uint32(min(max(n, 0), wireMask))
}

// Flags returns the span's flags.
func (s *Span) Flags() SpanFlags { return SpanFlags(s.wire >> wireBits) }

// SetFlags adds f to the span's flags.
func (s *Span) SetFlags(f SpanFlags) { s.wire |= uint32(f) << wireBits }

// ClearFlags takes f from the span's flags.
func (s *Span) ClearFlags(f SpanFlags) { s.wire &^= uint32(f) << wireBits }

// Duration returns End-Start in nanoseconds, never negative.
func (s *Span) Duration() int64 {
	if s.End < s.Start {
		return 0
	}
	return s.End - s.Start
}

// Extra holds the rarely present parts of a span.
type Extra struct {
	StatusMessage string
	Events        []Event
	Links         []Link
	// Trace is the span's trace when it is not its fragment's: an analysis
	// sets it on its own copy of a span it carries into a fragment of
	// another trace (see Fragment.Trace). Zero otherwise; decoders and the
	// store never set it.
	Trace TraceID
	// Parent is the span's parent id as captured when an analysis put its
	// copy under another span (a grafted or carried request span: see
	// Fragment.ParentID). Zero otherwise; decoders and the store never set
	// it.
	Parent SpanID
	// DroppedAttrs counts attributes dropped by the sender or by gymtrace's caps.
	DroppedAttrs uint32
}

// Event is a span event.
type Event struct {
	Time  int64
	Name  Str
	Attrs Attrs
}

// Link is a span link.
type Link struct {
	TraceID TraceID
	SpanID  SpanID
	Attrs   Attrs
}

// Batch is what a receiver hands the store: spans decoded from one request or
// one chunk of a file, each with its trace id and its parent's id.
type Batch struct {
	Spans []Span
	// Traces holds the spans' trace ids, one per span: Traces[i] is the
	// trace of Spans[i]. The store keeps one per fragment, not per span.
	Traces []TraceID
	// Parents holds the spans' parent ids, one per span, zero for a root;
	// nil when every span is a root. The store keeps one per fragment, its
	// top's (Fragment.TopParent).
	Parents []SpanID
	pooled  bool       // the arrays came from NewBatch: the store recycles them
	prep    *batchPrep // set by SubmitWait, which prepares on the caller's goroutine
}

// Append adds sp, a span of trace t whose parent is parent (zero: a root).
func (b *Batch) Append(t TraceID, parent SpanID, sp Span) {
	if b.Parents == nil && len(b.Spans) > 0 {
		b.Parents = make([]SpanID, len(b.Spans), cap(b.Spans))
	}
	b.Spans = append(b.Spans, sp)
	b.Traces = append(b.Traces, t)
	b.Parents = append(b.Parents, parent)
}

// AppendBatch adds o's spans.
func (b *Batch) AppendBatch(o Batch) {
	if b.Parents == nil && o.Parents != nil {
		b.Parents = make([]SpanID, len(b.Spans), cap(b.Spans))
	}
	if b.Parents != nil {
		if o.Parents != nil {
			b.Parents = append(b.Parents, o.Parents...)
		} else {
			b.Parents = append(b.Parents, make([]SpanID, len(o.Spans))...)
		}
	}
	b.Spans = append(b.Spans, o.Spans...)
	b.Traces = append(b.Traces, o.Traces...)
}

// Slice returns spans i..j of b, sharing its arrays; not pooled.
func (b Batch) Slice(i, j int) Batch {
	s := Batch{Spans: b.Spans[i:j:j], Traces: b.Traces[i:j:j]}
	if b.Parents != nil {
		s.Parents = b.Parents[i:j:j]
	}
	return s
}

// ParentOf returns span i's parent id.
func (b *Batch) ParentOf(i int) SpanID {
	if b.Parents == nil {
		return SpanID{}
	}
	return b.Parents[i]
}

// check reports a batch whose spans, trace ids and parent ids do not pair up.
func (b *Batch) check() error {
	if len(b.Traces) != len(b.Spans) {
		return fmt.Errorf("%w: %d spans, %d trace ids", ErrBadBatch, len(b.Spans), len(b.Traces))
	}
	if b.Parents != nil && len(b.Parents) != len(b.Spans) {
		return fmt.Errorf("%w: %d spans, %d parent ids", ErrBadBatch, len(b.Spans), len(b.Parents))
	}
	return nil
}

// relayout replaces the batch's spans with their prepared layout, giving
// pooled arrays back: the layout's traces and parents are the prepared
// batch's, and its array is pooled (see prepare).
func (b *Batch) relayout(spans []Span) {
	b.recycle()
	b.Spans, b.Traces, b.Parents, b.pooled = spans, nil, nil, true
}

// recycle gives the arrays of a batch from NewBatch back to the pool.
func (b *Batch) recycle() {
	if b.pooled {
		spanPool.put(b.Spans)
		tracePool.put(b.Traces)
		parentPool.put(b.Parents)
		b.pooled = false
	}
}

// NewBatch returns an empty batch with room for n spans. Its arrays come
// from a pool that the store refills once it has applied the batch (the
// store copies what it keeps), so a busy receiver reuses span arrays
// instead of leaving one per request to the garbage collector. Submit or
// Add the batch, or drop it; never use its spans after handing it over.
func NewBatch(n int) Batch {
	return Batch{Spans: spanPool.get(n), Traces: tracePool.get(n), Parents: parentPool.get(n), pooled: true}
}

// spanPool, tracePool and parentPool hold a batch's arrays by power-of-two
// capacity.
var (
	spanPool   arrayPool[Span]
	tracePool  arrayPool[TraceID]
	parentPool arrayPool[SpanID]
)

const (
	poolMinBits = 6  // 64 spans
	poolMaxBits = 13 // 8192 spans
	poolDepth   = 16 // arrays kept per size
)

type arrayPool[T any] struct {
	mu   sync.Mutex
	free [poolMaxBits + 1][][]T
}

func poolBits(n int) int {
	b := poolMinBits
	for 1<<b < n {
		b++
	}
	return b
}

func (p *arrayPool[T]) get(n int) []T {
	b := poolBits(n)
	if b > poolMaxBits {
		return make([]T, 0, n)
	}
	p.mu.Lock()
	if k := len(p.free[b]); k > 0 {
		s := p.free[b][k-1]
		p.free[b] = p.free[b][:k-1]
		p.mu.Unlock()
		return s
	}
	p.mu.Unlock()
	return make([]T, 0, 1<<b)
}

// put takes back an array from NewBatch. The elements are cleared first,
// so the pool keeps no attributes alive.
func (p *arrayPool[T]) put(s []T) {
	b := poolBits(cap(s))
	if b > poolMaxBits || cap(s) != 1<<b {
		return
	}
	clear(s)
	p.mu.Lock()
	if len(p.free[b]) < poolDepth {
		p.free[b] = append(p.free[b], s[:0])
	}
	p.mu.Unlock()
}
