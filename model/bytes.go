package model

import "unsafe"

// Byte cost of a stored span, as --max-bytes counts it: the Span itself, its
// index entry, its packed attributes and its rarely present parts. Attribute
// sets shared between spans and interned strings are counted per span and
// not at all respectively, so the count errs high for spans and the
// interner has its own bound (Options.MaxStringBytes). Counting a shared set
// once would take a reference count per set on every store and eviction, and
// would still err low: a shared set lives in an arena freed only when every
// set in it is (AttrBuilder.Attrs).
const (
	spanSize  = int64(unsafe.Sizeof(Span{}))
	indexCost = 40 // a locs entry with the map's spare room
	extraSize = int64(unsafe.Sizeof(Extra{}))
	eventSize = int64(unsafe.Sizeof(Event{}))
	linkSize  = int64(unsafe.Sizeof(Link{}))

	traceIDSize = int64(unsafe.Sizeof(TraceID{}))
	spanIDSize  = int64(unsafe.Sizeof(SpanID{}))
)

func spanBytes(sp *Span) int64 {
	n := spanSize + indexCost + int64(sp.Attrs.Size())
	if x := sp.Extra; x != nil {
		n += extraSize + int64(len(x.StatusMessage))
		for i := range x.Events {
			n += eventSize + int64(x.Events[i].Attrs.Size())
		}
		for i := range x.Links {
			n += linkSize + int64(x.Links[i].Attrs.Size())
		}
	}
	return n
}

// Bytes returns what the batch's spans take as --max-bytes counts them,
// and their trace and parent ids: the memory a receiver holds for the
// batch until the store has it.
func (b Batch) Bytes() int64 {
	n := int64(len(b.Traces))*traceIDSize + int64(len(b.Parents))*spanIDSize
	for i := range b.Spans {
		n += spanBytes(&b.Spans[i])
	}
	return n
}
