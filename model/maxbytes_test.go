package model

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"testing"
)

// TestStoreMaxBytesHoldsMemoryFlat stores spans carrying a 4 KiB attribute
// each, fifty times what MaxBytes allows: the count of stored bytes stays
// under the bound, and so does the live heap, flat from a fifth of the
// run to its end.
func TestStoreMaxBytesHoldsMemoryFlat(t *testing.T) {
	const maxBytes = 16 << 20
	total := scaled(200_000)
	st := NewStore(Options{MaxBytes: maxBytes})
	defer st.Close()
	l := NewLocal(st.Interner())
	key := l.Intern([]byte("payload"))
	ridKey := l.Intern([]byte(RolloutIDKey))
	val := make([]byte, 4<<10)
	heapAt := func() uint64 {
		st.Sync()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	var early uint64
	const batch = 1000
	for i := 0; i < total; i += batch {
		var spans Batch
		for k := i; k < i+batch; k++ {
			var trace TraceID
			binary.BigEndian.PutUint64(trace[8:], uint64(k/10+1))
			binary.BigEndian.PutUint64(val, uint64(k)) // unique: no shared sets
			var b AttrBuilder
			if k%10 == 0 {
				b.String(l, ridKey, []byte(fmt.Sprintf("r-%d", k/10)))
			}
			b.String(l, key, val)
			var parent SpanID
			if k%10 > 0 {
				parent = numID(1)
			}
			spans.Append(trace, parent, Span{SpanID: numID(uint64(k%10 + 1)), Attrs: b.Attrs()})
		}
		if err := st.Add(spans); err != nil {
			t.Fatal(err)
		}
		if i == total/5 {
			early = heapAt()
		}
	}
	late := heapAt()
	s := st.Snapshot()
	if s.Stats.StoredBytes > maxBytes || s.Stats.StoredBytes < maxBytes/2 {
		t.Errorf("%d bytes stored, want under %d and near it", s.Stats.StoredBytes, maxBytes)
	}
	if s.Stats.EvictedSpans == 0 || s.Stats.Stored+int(s.Stats.EvictedSpans) != total {
		t.Errorf("stored %d + evicted %d != %d sent", s.Stats.Stored, s.Stats.EvictedSpans, total)
	}
	t.Logf("%d spans of 4 KiB sent, %d held (%d bytes); live heap %d MiB at a fifth, %d MiB at the end",
		total, s.Stats.Stored, s.Stats.StoredBytes, early>>20, late>>20)
	if late > early*13/10+4<<20 {
		t.Errorf("live heap grew from %d to %d MiB under a fixed --max-bytes", early>>20, late>>20)
	}
	if late > 3*maxBytes {
		t.Errorf("live heap %d MiB for a %d MiB bound", late>>20, maxBytes>>20)
	}
}

// TestInternerBounded: unique names past the string budget read as
// StringsFullName and are counted, instead of growing the table for good.
func TestInternerBounded(t *testing.T) {
	st := NewStore(Options{MaxStringBytes: 1 << 20})
	defer st.Close()
	l := NewLocal(st.Interner())
	var last Str
	for i := 0; i < 100_000; i++ {
		last = l.Intern([]byte(fmt.Sprintf("unique-span-name-%08d", i)))
	}
	st.Sync()
	s := st.Snapshot()
	if s.Str(last) != StringsFullName {
		t.Errorf("the last name reads %q, want %q", s.Str(last), StringsFullName)
	}
	if s.Stats.StringBytes > 1<<20+int64(len(StringsFullName)) || s.Stats.StringsDropped == 0 {
		t.Errorf("string table %d bytes, %d dropped; want at most 1 MiB and some dropped", s.Stats.StringBytes, s.Stats.StringsDropped)
	}
}
