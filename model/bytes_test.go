package model

import (
	"encoding/binary"
	"testing"
	"unsafe"
)

// TestSpanSize pins the size of a Span, the most numerous thing the store
// holds: 40 bytes of 8-byte fields and 16 of small ones, no padding.
func TestSpanSize(t *testing.T) {
	if n := unsafe.Sizeof(Span{}); n != 56 {
		t.Errorf("Span is %d bytes, want 56", n)
	}
	if n := unsafe.Offsetof(Span{}.Status) + unsafe.Sizeof(Span{}.Status); n != 56 {
		t.Errorf("Span's fields end at %d bytes, want 56: padding between them", n)
	}
}

// TestSpanWireAndFlags: the wire size and the flags share a word, and
// neither spills into the other.
func TestSpanWireAndFlags(t *testing.T) {
	var sp Span
	sp.SetFlags(FlagTruncated | FlagCarried)
	sp.SetWireSize(wireMask + 10) // past the field: saturates
	if sp.WireSize() != wireMask || sp.Flags() != FlagTruncated|FlagCarried {
		t.Fatalf("size %d flags %b", sp.WireSize(), sp.Flags())
	}
	sp.SetWireSize(1234)
	sp.ClearFlags(FlagTruncated)
	if sp.WireSize() != 1234 || sp.Flags() != FlagCarried {
		t.Fatalf("size %d flags %b, want 1234 and carried", sp.WireSize(), sp.Flags())
	}
	sp.SetWireSize(-1)
	if sp.WireSize() != 0 || sp.Flags() != FlagCarried {
		t.Fatalf("size %d flags %b, want 0 and carried", sp.WireSize(), sp.Flags())
	}
}

// TestRolloutSizes pins the sizes of what the store holds per rollout,
// each at the top of its allocation size class: most rollouts are one
// fragment, so these are paid once every few spans.
func TestRolloutSizes(t *testing.T) {
	for _, c := range []struct {
		what      string
		got, want uintptr
	}{
		{"published Rollout with its one-fragment array (rollout1)", unsafe.Sizeof(rollout1{}), 112},
		{"published Fragment", unsafe.Sizeof(Fragment{}), 64},
		{"writer's rollout (roll)", unsafe.Sizeof(roll{}), 48},
		{"writer's fragment (frag)", unsafe.Sizeof(frag{}), 112},
		{"writer's trace record (traceRec)", unsafe.Sizeof(traceRec{}), 40},
	} {
		if c.got != c.want {
			t.Errorf("%s is %d bytes, want %d", c.what, c.got, c.want)
		}
	}
}

// TestStoredBytesCountsSharedSetsPerSpan pins what --max-bytes counts, as
// the README states it: per span 96 bytes, its packed attributes in full
// even when identical spans share one copy, and its status message, events
// and links.
func TestStoredBytesCountsSharedSetsPerSpan(t *testing.T) {
	if spanSize+indexCost != 96 || extraSize != 96 || eventSize != 24 || linkSize != 32 {
		t.Errorf("span %d + index %d, extra %d, event %d, link %d bytes: update README (what --max-bytes counts)",
			spanSize, indexCost, extraSize, eventSize, linkSize)
	}
	st := NewStore(Options{})
	defer st.Close()
	l := NewLocal(st.Interner())
	route := l.Intern([]byte("http.route"))
	var b AttrBuilder
	const n = 50
	var batch Batch
	var first Attrs
	for i := 0; i < n; i++ {
		b.Reset()
		b.String(l, route, []byte("/v1/responses"))
		a := b.Attrs()
		if i == 1 {
			first = a
		}
		var trace TraceID
		binary.BigEndian.PutUint64(trace[8:], uint64(i+1))
		batch.Append(trace, SpanID{}, Span{SpanID: numID(1), Attrs: a})
	}
	spans := batch.Spans
	shared := spans[n-1].Attrs
	if !sameAttrs(shared, first) {
		t.Fatal("identical attribute sets are not shared: the test no longer shows what it is about")
	}
	var trace TraceID
	trace[0] = 0xee
	batch.Append(trace, SpanID{}, Span{SpanID: numID(1), Extra: &Extra{StatusMessage: "boom",
		Events: []Event{{Attrs: shared}, {}}, Links: []Link{{}}}})
	if err := st.Add(batch); err != nil {
		t.Fatal(err)
	}
	st.Sync()
	sum := int64(0)
	for i := 0; i < n; i++ {
		sum += 96 + int64(spans[i].Attrs.Size())
	}
	sum += 96 + 96 + 4 + 2*24 + int64(shared.Size()) + 32
	if got := st.Snapshot().Stats.StoredBytes; got != sum {
		t.Errorf("StoredBytes = %d, want %d: each span counts its shared set in full", got, sum)
	}
}
