package model

// spanSlab carves the span arrays of small fragments from shared chunks.
// A fragment born from a batch gets exactly the room its spans need, but an
// allocation of its own is rounded up to Go's next size class and carries a
// header: a 10-span array (960 bytes) takes 1,032. Carved arrays have their
// exact capacity (append past it moves the fragment to an allocation of its
// own, as before) and a chunk is freed when none of its fragments is
// referenced; eviction takes the oldest rollouts first, so neighbours in a
// chunk go together.
type spanSlab struct {
	buf []Span
}

const (
	slabSpans    = 512 // spans per chunk (48 KB)
	slabMaxCarve = 32  // larger arrays are allocated on their own
)

// make returns an empty slice with room for exactly n spans.
func (s *spanSlab) make(n int) []Span {
	if n > slabMaxCarve {
		return make([]Span, 0, n)
	}
	if cap(s.buf)-len(s.buf) < n {
		s.buf = make([]Span, 0, slabSpans)
	}
	l := len(s.buf)
	s.buf = s.buf[:l+n]
	return s.buf[l : l : l+n]
}
