package model

// spanSlab carves span arrays from shared chunks. A fragment born from a
// batch gets exactly the room its spans need, but an allocation of its own
// is rounded up to Go's next size class, or past 32 KB to whole 8 KB pages:
// a 600-span array (38,400 bytes at 64 a span) takes 40,960. Carved arrays
// have their exact capacity (append past it moves the fragment to an
// allocation of its own, as before) and a chunk is freed when none of its
// fragments is referenced; eviction takes the oldest rollouts first, so
// neighbours in a chunk go together.
type spanSlab struct {
	buf []Span
	// chunk is the spans a chunk holds, most the largest array carved:
	// larger ones are allocated on their own.
	chunk, most int
}

// Slab sizes. A chunk is whole pages: 1,024 spans of 64 bytes are eight.
const (
	slabSpans    = 1024 // the small fragments' chunk (64 KB)
	slabMaxCarve = 32
	laidSpans    = 8 * 1024 // the chunk of batches kept as they were laid out (512 KB)
	laidMaxCarve = 2048
)

// make returns an empty slice with room for exactly n spans.
func (s *spanSlab) make(n int) []Span {
	if n > s.most {
		return make([]Span, 0, n)
	}
	if cap(s.buf)-len(s.buf) < n {
		s.buf = make([]Span, 0, s.chunk)
	}
	l := len(s.buf)
	s.buf = s.buf[:l+n]
	return s.buf[l : l : l+n]
}
