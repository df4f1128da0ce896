package model

import (
	"encoding/binary"
	"testing"
	"unsafe"
)

// TestStoredBytesCountsSharedSetsPerSpan pins what --max-bytes counts, as
// the README states it: per span 136 bytes, its packed attributes in full
// even when identical spans share one copy, and its status message, events
// and links.
func TestStoredBytesCountsSharedSetsPerSpan(t *testing.T) {
	if spanSize+indexCost != 136 || extraSize != 72 || eventSize != 32 || linkSize != 40 {
		t.Errorf("span %d + index %d, extra %d, event %d, link %d bytes: update README (what --max-bytes counts)",
			spanSize, indexCost, extraSize, eventSize, linkSize)
	}
	st := NewStore(Options{})
	defer st.Close()
	l := NewLocal(st.Interner())
	route := l.Intern([]byte("http.route"))
	var b AttrBuilder
	const n = 50
	spans := make([]Span, 0, n+1)
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
		spans = append(spans, Span{TraceID: trace, SpanID: numID(1), Attrs: a})
	}
	shared := spans[n-1].Attrs
	if unsafe.StringData(string(shared)) != unsafe.StringData(string(first)) {
		t.Fatal("identical attribute sets are not shared: the test no longer shows what it is about")
	}
	var trace TraceID
	trace[0] = 0xee
	spans = append(spans, Span{TraceID: trace, SpanID: numID(1), Extra: &Extra{StatusMessage: "boom",
		Events: []Event{{Attrs: shared}, {}}, Links: []Link{{}}}})
	if err := st.Add(Batch{Spans: spans}); err != nil {
		t.Fatal(err)
	}
	st.Sync()
	sum := int64(0)
	for i := 0; i < n; i++ {
		sum += 136 + int64(len(spans[i].Attrs))
	}
	sum += 136 + 72 + 4 + 2*32 + int64(len(shared)) + 40
	if got := st.Snapshot().Stats.StoredBytes; got != sum {
		t.Errorf("StoredBytes = %d, want %d: each span counts its shared set in full", got, sum)
	}
}
