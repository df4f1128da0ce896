package receiver

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/nemo-gym/gymtrace/model"
	"google.golang.org/protobuf/encoding/protowire"
)

// OTLP/JSON follows the protobuf JSON mapping with one exception that
// protojson gets wrong: trace and span ids are hex, not base64. Keys are
// lowerCamelCase, but the original snake_case names are accepted too, as
// protojson accepts them. 64-bit integers come as strings or numbers, enums
// as numbers or names.
//
// DecodeJSON reads the request in one pass, with no intermediate tree, and
// feeds the same span builder DecodeProto feeds: both formats yield the same
// spans, limits, rejections and WireSize. WireSize, the span's exact
// protobuf size, is summed field by field while reading, from the sizes the
// protobuf encoder would write for the same values.

var (
	kindEnum   = []string{"UNSPECIFIED", "INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER"}
	statusEnum = []string{"UNSET", "OK", "ERROR"}
)

// ErrBadHexID reports a trace or span id in OTLP/JSON that is not hex.
var ErrBadHexID = errors.New("bad hex id")

// errDupField: a field given twice (or in both spellings) is refused, as
// protojson refuses it, rather than silently picking one.
var errDupField = errors.New("field given more than once")

// DecodeJSON decodes an OTLP/JSON ExportTraceServiceRequest straight into
// compact spans, interning through l. It never keeps a reference to b.
// Invalid spans (wrong id lengths) are left out and counted in the Report.
// Malformed JSON fails with its line and column; content OTLP cannot hold (a
// non-hex id, an unknown enum name, a string where a number belongs) fails
// with the JSON path of the field, e.g.
// resourceSpans[0].scopeSpans[0].spans[3].traceId.
func DecodeJSON(l *model.Local, b []byte, lim Limits) (model.Batch, Report, error) {
	return decodeJSON(l, b, lim, nil)
}

// decodeJSON is DecodeJSON for one of several requests decoded at once:
// turn, when not nil, returns once every request before this one is
// decoded, and is called before a resource new to the interner is added
// (see decoder.internResource).
func decodeJSON(l *model.Local, b []byte, lim Limits, turn func()) (model.Batch, Report, error) {
	d := getDecoder(l, lim)
	defer putDecoder(d)
	d.turn = turn
	j := jsonDecoders.Get().(*jsonDecoder)
	defer j.release()
	j.d = d
	j.s.reset(b)
	// Spans gather in the pooled scratch slice and are copied once into a
	// batch of the exact size: counting them first would cost a pass over
	// the text, and a guess over-allocates (the store copies the batch, so
	// any excess is garbage).
	d.spans, d.traces, d.parents = j.spans[:0], j.traces[:0], j.parents[:0]
	err := j.request()
	j.spans, j.traces, j.parents = d.spans, d.traces, d.parents
	if err != nil {
		var le *locError
		if errors.As(err, &le) {
			line, col := lineCol(b, le.off)
			err = fmt.Errorf("decode otlp json: at line %d, column %d: %w", line, col, err)
		}
		return model.Batch{}, Report{}, err
	}
	d.rep.ValuesRepaired += j.s.repaired
	return model.Batch{Spans: slices.Clone(j.spans), Traces: slices.Clone(j.traces), Parents: slices.Clone(j.parents)}, d.rep, nil
}

// jsonDecoder is the per-call state of DecodeJSON around the shared decoder.
type jsonDecoder struct {
	d *decoder
	s jsonScanner
	// out holds the rendered text of array, map and bytes values; tmp the
	// decoded bytes of a bytes value, or a map key met after its value.
	out, tmp []byte
	id       []byte // an id of unusual length
	rkey     []byte // resource cache key
	svc      []byte
	spans    []model.Span
	traces   []model.TraceID
	parents  []model.SpanID
}

var jsonDecoders = sync.Pool{New: func() any { return new(jsonDecoder) }}

func (j *jsonDecoder) release() {
	j.d = nil
	j.s.b = nil
	// The scratch spans point at attributes and extras now owned by the
	// batch: drop the references so the pool keeps none of it alive.
	clear(j.spans)
	if cap(j.spans) > 1<<14 {
		j.spans = nil
	}
	j.spans = j.spans[:0]
	if cap(j.traces) > 1<<14 {
		j.traces = nil
	}
	j.traces = j.traces[:0]
	if cap(j.parents) > 1<<14 {
		j.parents = nil
	}
	j.parents = j.parents[:0]
	for _, p := range []*[]byte{&j.out, &j.tmp, &j.id, &j.rkey, &j.svc, &j.s.vscr, &j.s.kscr, &j.s.sscr} {
		if cap(*p) > 1<<20 {
			*p = nil
		}
	}
	jsonDecoders.Put(j)
}

// jat is at for the JSON paths: syntax errors carry a line and column and
// no path.
func jat(elem string, err error) error {
	if le, ok := err.(*locError); ok && le.syntax {
		return err
	}
	return at(elem, err)
}

func jatIndex(field string, i int, err error) error {
	if le, ok := err.(*locError); ok && le.syntax {
		return err
	}
	return atIndex(field, i, err)
}

// once refuses a second occurrence of a field within one object.
func (j *jsonDecoder) once(seen *uint32, bit uint32, name string) error {
	if *seen&bit != 0 {
		return at(name, j.s.valErr(j.s.i, errDupField))
	}
	*seen |= bit
	return nil
}

// isNull consumes a null if one is at the cursor.
func (j *jsonDecoder) isNull() (bool, error) {
	if j.s.b[j.s.i] != 'n' {
		return false, nil
	}
	return true, j.s.lit("null")
}

// lenField is the encoded size of a length-delimited field numbered below 16.
func lenField(n int) int { return 1 + protowire.SizeBytes(n) }

// optLen is lenField for a proto3 string or bytes field, absent when empty.
func optLen(n int) int {
	if n == 0 {
		return 0
	}
	return lenField(n)
}

// optVarint is the encoded size of a proto3 varint field numbered below 16,
// absent when zero.
func optVarint(v uint64) int {
	if v == 0 {
		return 0
	}
	return 1 + protowire.SizeVarint(v)
}

func (j *jsonDecoder) request() error {
	s := &j.s
	s.ws()
	null, err := s.open('{')
	if err != nil {
		return err
	}
	if !null {
		var seen uint32
		for n := 0; ; n++ {
			key, ok, err := s.nextKey(n)
			if err != nil {
				return err
			}
			if !ok {
				break
			}
			switch string(key) {
			case "resourceSpans", "resource_spans":
				if err := j.once(&seen, 1, "resourceSpans"); err != nil {
					return err
				}
				null, err := s.open('[')
				if err != nil {
					return jat("resourceSpans", err)
				}
				for i := 0; !null; i++ {
					ok, err := s.nextElem(i)
					if err != nil {
						return err
					}
					if !ok {
						break
					}
					j.d.rs = i
					if err := j.resourceSpans(); err != nil {
						return jatIndex("resourceSpans", i, err)
					}
				}
			default:
				if err := j.skip(); err != nil {
					return err
				}
			}
		}
	}
	s.ws()
	if s.i < len(s.b) {
		return s.synErr(s.i, "after top-level value")
	}
	return nil
}

func (j *jsonDecoder) resourceSpans() error {
	s, d := &j.s, j.d
	first := len(d.spans)
	var res model.ResourceID
	null, err := s.open('{')
	if err != nil || null {
		return err
	}
	var seen uint32
	for n := 0; ; n++ {
		key, ok, err := s.nextKey(n)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		switch string(key) {
		case "resource":
			if err := j.once(&seen, 1, "resource"); err != nil {
				return err
			}
			if null, err := j.isNull(); null || err != nil {
				if err != nil {
					return err
				}
				continue
			}
			if res, err = j.resource(); err != nil {
				return jat("resource", err)
			}
		case "scopeSpans", "scope_spans":
			if err := j.once(&seen, 2, "scopeSpans"); err != nil {
				return err
			}
			null, err := s.open('[')
			if err != nil {
				return jat("scopeSpans", err)
			}
			for i := 0; !null; i++ {
				ok, err := s.nextElem(i)
				if err != nil {
					return err
				}
				if !ok {
					break
				}
				d.ss = i
				if err := j.scopeSpans(); err != nil {
					return jatIndex("scopeSpans", i, err)
				}
			}
		case "schemaUrl", "schema_url":
			if err := j.once(&seen, 4, "schemaUrl"); err != nil {
				return err
			}
			if _, err := j.strNotKept(); err != nil {
				return jat("schemaUrl", err)
			}
		default:
			if err := j.skip(); err != nil {
				return err
			}
		}
	}
	// The resource may follow the spans in the text; spans are stored with
	// it once the object is read.
	if res != 0 {
		for k := first; k < len(d.spans); k++ {
			d.spans[k].Resource = res
		}
	}
	return nil
}

// resource interns a Resource object, cached by its text: every request from
// one process repeats the same resource, so it is decoded once. The cache is
// DecodeProto's; a leading zero byte keeps the JSON keys apart from its
// protobuf keys (no Resource message that decodes starts with a zero tag).
func (j *jsonDecoder) resource() (model.ResourceID, error) {
	s, d := &j.s, j.d
	if s.b[s.i] != '{' {
		return 0, s.wrongType("an object")
	}
	start := s.i
	if err := j.skip(); err != nil {
		return 0, err
	}
	j.rkey = append(append(j.rkey[:0], 0), s.b[start:s.i]...)
	if id, ok := d.res[string(j.rkey)]; ok {
		return id, nil
	}
	s.i = start
	if _, err := s.open('{'); err != nil {
		return 0, err
	}
	d.sub.Reset()
	j.svc = j.svc[:0]
	var seen uint32
	for n := 0; ; n++ {
		key, ok, err := s.nextKey(n)
		if err != nil {
			return 0, err
		}
		if !ok {
			break
		}
		switch string(key) {
		case "attributes":
			if err := j.once(&seen, 1, "attributes"); err != nil {
				return 0, err
			}
			null, err := s.open('[')
			if err != nil {
				return 0, jat("attributes", err)
			}
			for i := 0; !null; i++ {
				ok, err := s.nextElem(i)
				if err != nil {
					return 0, err
				}
				if !ok {
					break
				}
				k, v, _, err := j.keyValue(true)
				if err != nil {
					return 0, jatIndex("attributes", i, err)
				}
				d.addAttr(&d.sub, k, v)
				if k == d.svcKey && v.kind == model.ValString {
					j.svc = append(j.svc[:0], v.s...)
				}
			}
		case "droppedAttributesCount", "dropped_attributes_count":
			if err := j.once(&seen, 2, "droppedAttributesCount"); err != nil {
				return 0, err
			}
			if _, err := j.uintVal(); err != nil {
				return 0, jat("droppedAttributesCount", err)
			}
		default:
			if err := j.skip(); err != nil {
				return 0, err
			}
		}
	}
	attrs := d.sub.Sorted(d.l.Interner())
	id := d.internResource(attrs, d.l.Intern(j.svc))
	d.res[string(j.rkey)] = id
	return id, nil
}

func (j *jsonDecoder) scopeSpans() error {
	s := &j.s
	null, err := s.open('{')
	if err != nil || null {
		return err
	}
	var seen uint32
	for n := 0; ; n++ {
		key, ok, err := s.nextKey(n)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		switch string(key) {
		case "scope":
			if err := j.once(&seen, 1, "scope"); err != nil {
				return err
			}
			n := s.repaired
			err := j.scope()
			s.repaired = n // not kept: see skip
			if err != nil {
				return jat("scope", err)
			}
		case "spans":
			if err := j.once(&seen, 2, "spans"); err != nil {
				return err
			}
			null, err := s.open('[')
			if err != nil {
				return jat("spans", err)
			}
			for i := 0; !null; i++ {
				ok, err := s.nextElem(i)
				if err != nil {
					return err
				}
				if !ok {
					break
				}
				if err := j.span(i); err != nil {
					return jatIndex("spans", i, err)
				}
			}
		case "schemaUrl", "schema_url":
			if err := j.once(&seen, 4, "schemaUrl"); err != nil {
				return err
			}
			if _, err := j.strNotKept(); err != nil {
				return jat("schemaUrl", err)
			}
		default:
			if err := j.skip(); err != nil {
				return err
			}
		}
	}
	return nil
}

// scope checks an InstrumentationScope; spans do not keep it.
func (j *jsonDecoder) scope() error {
	s := &j.s
	null, err := s.open('{')
	if err != nil || null {
		return err
	}
	var seen uint32
	for n := 0; ; n++ {
		key, ok, err := s.nextKey(n)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		switch string(key) {
		case "name", "version":
			bit, name := uint32(1), "name"
			if key[0] == 'v' {
				bit, name = 2, "version"
			}
			if err := j.once(&seen, bit, name); err != nil {
				return err
			}
			if _, err := j.strVal(); err != nil {
				return jat(name, err)
			}
		case "attributes":
			if err := j.once(&seen, 4, "attributes"); err != nil {
				return err
			}
			if err := j.checkAttrs(); err != nil {
				return err
			}
		case "droppedAttributesCount", "dropped_attributes_count":
			if err := j.once(&seen, 8, "droppedAttributesCount"); err != nil {
				return err
			}
			if _, err := j.uintVal(); err != nil {
				return jat("droppedAttributesCount", err)
			}
		default:
			if err := j.skip(); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkAttrs reads an attribute list that is not kept, for its errors.
func (j *jsonDecoder) checkAttrs() error {
	s := &j.s
	null, err := s.open('[')
	if err != nil {
		return jat("attributes", err)
	}
	for i := 0; !null; i++ {
		ok, err := s.nextElem(i)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		if _, _, _, err := j.keyValue(false); err != nil {
			return jatIndex("attributes", i, err)
		}
	}
	return nil
}

// Bits of the span fields seen, to refuse duplicates.
const (
	sfTraceID = 1 << iota
	sfSpanID
	sfTraceState
	sfParent
	sfFlags
	sfName
	sfKind
	sfStart
	sfEnd
	sfAttrs
	sfDroppedAttrs
	sfEvents
	sfDroppedEvents
	sfLinks
	sfDroppedLinks
	sfStatus
)

func extraOf(ex **model.Extra) *model.Extra {
	if *ex == nil {
		*ex = new(model.Extra)
	}
	return *ex
}

// span decodes one Span object, as decoder.span does a Span message: same
// fields kept, same caps, same rejection reasons, and WireSize the size the
// protobuf encoder gives the same span.
func (j *jsonDecoder) span(idx int) error {
	s, d := &j.s, j.d
	sp := model.Span{Parent: -1}
	var parent model.SpanID
	var trace model.TraceID
	var ex *model.Extra
	tidLen, sidLen, pidLen := 0, 0, 0
	size := 0
	d.attrs.Reset()
	null, err := s.open('{')
	if err != nil {
		return err
	}
	var seen uint32
	for n := 0; !null; n++ {
		key, ok, err := s.nextKey(n)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		switch string(key) {
		case "traceId", "trace_id":
			if tidLen, err = j.idField(&seen, sfTraceID, "traceId", trace[:]); err != nil {
				return err
			}
			size += optLen(tidLen)
		case "spanId", "span_id":
			if sidLen, err = j.idField(&seen, sfSpanID, "spanId", sp.SpanID[:]); err != nil {
				return err
			}
			size += optLen(sidLen)
		case "parentSpanId", "parent_span_id":
			if pidLen, err = j.idField(&seen, sfParent, "parentSpanId", parent[:]); err != nil {
				return err
			}
			size += optLen(pidLen)
		case "flags":
			if err := j.once(&seen, sfFlags, "flags"); err != nil {
				return err
			}
			v, err := j.uintVal()
			if err != nil {
				return jat("flags", err)
			}
			if uint32(v) != 0 {
				size += protowire.SizeTag(16) + 4 // fixed32
			}
		case "name":
			if err := j.once(&seen, sfName, "name"); err != nil {
				return err
			}
			v, err := j.strVal()
			if err != nil {
				return jat("name", err)
			}
			if len(v) > 0 {
				sp.Name = d.name(v)
				size += lenField(len(v))
			}
		case "kind":
			if err := j.once(&seen, sfKind, "kind"); err != nil {
				return err
			}
			k, err := j.enumVal("SPAN_KIND_", kindEnum)
			if err != nil {
				return jat("kind", err)
			}
			size += optVarint(uint64(int64(k)))
			if k >= 0 && k <= int32(model.KindConsumer) {
				sp.Kind = model.Kind(k)
			}
		case "startTimeUnixNano", "start_time_unix_nano":
			if err := j.once(&seen, sfStart, "startTimeUnixNano"); err != nil {
				return err
			}
			v, err := j.uintVal()
			if err != nil {
				return jat("startTimeUnixNano", err)
			}
			if v != 0 {
				sp.Start = int64(v)
				size += 9
			}
		case "endTimeUnixNano", "end_time_unix_nano":
			if err := j.once(&seen, sfEnd, "endTimeUnixNano"); err != nil {
				return err
			}
			v, err := j.uintVal()
			if err != nil {
				return jat("endTimeUnixNano", err)
			}
			if v != 0 {
				sp.End = int64(v)
				size += 9
			}
		case "attributes":
			if err := j.once(&seen, sfAttrs, "attributes"); err != nil {
				return err
			}
			if err := j.spanAttrs(&sp, &ex, &size); err != nil {
				return err
			}
		case "status":
			if err := j.once(&seen, sfStatus, "status"); err != nil {
				return err
			}
			if err := j.spanStatus(&sp, &ex, &size); err != nil {
				return err
			}
		default:
			if err := j.spanRare(key, &seen, &sp, &ex, &size); err != nil {
				return err
			}
		}
	}
	j.emitSpan(idx, &sp, trace, parent, ex, size, spanIDsReason(trace, sp.SpanID, tidLen, sidLen, pidLen))
	return nil
}

// idField decodes one of a span's ids, once, into dst: its length in
// bytes as decoded, for spanIDsReason to judge.
func (j *jsonDecoder) idField(seen *uint32, bit uint32, name string, dst []byte) (int, error) {
	if err := j.once(seen, bit, name); err != nil {
		return 0, err
	}
	n, err := j.hexID(dst)
	if err != nil {
		return 0, jat(name, err)
	}
	return n, nil
}

// emitSpan completes a decoded span with its attributes, extra and wire
// size, and adds it to the batch, or rejects it for reason.
func (j *jsonDecoder) emitSpan(idx int, sp *model.Span, trace model.TraceID, parent model.SpanID, ex *model.Extra, size int, reason string) {
	d := j.d
	sp.SetWireSize(size)
	sp.Attrs = d.attrs.Attrs()
	sp.Extra = ex
	if reason != "" {
		d.rep.reject(fmt.Sprintf("resource_spans[%d].scope_spans[%d].spans[%d]: %s", d.rs, d.ss, idx, reason))
		return
	}
	d.spans = append(d.spans, *sp)
	d.traces = append(d.traces, trace)
	d.parents = append(d.parents, parent)
}

// spanRare decodes the Span fields Gym's exporters seldom or never set
// (trace state, dropped counts, events, links) and skips unknown ones.
// They are out of span's switch so that its hot cases stay one function,
// and cost a call only where they occur.
func (j *jsonDecoder) spanRare(key []byte, seen *uint32, sp *model.Span, ex **model.Extra, size *int) error {
	switch string(key) {
	case "traceState", "trace_state":
		if err := j.once(seen, sfTraceState, "traceState"); err != nil {
			return err
		}
		v, err := j.strNotKept()
		if err != nil {
			return jat("traceState", err)
		}
		*size += optLen(len(v))
	case "droppedAttributesCount", "dropped_attributes_count":
		if err := j.once(seen, sfDroppedAttrs, "droppedAttributesCount"); err != nil {
			return err
		}
		v, err := j.uintVal()
		if err != nil {
			return jat("droppedAttributesCount", err)
		}
		if c := uint32(v); c != 0 {
			*size += optVarint(uint64(c))
			extraOf(ex).DroppedAttrs += c
		}
	case "events":
		if err := j.once(seen, sfEvents, "events"); err != nil {
			return err
		}
		if err := j.spanEvents(sp, ex, size); err != nil {
			return err
		}
	case "links":
		if err := j.once(seen, sfLinks, "links"); err != nil {
			return err
		}
		if err := j.spanLinks(sp, ex, size); err != nil {
			return err
		}
	case "droppedEventsCount", "dropped_events_count", "droppedLinksCount", "dropped_links_count":
		bit, name := uint32(sfDroppedEvents), "droppedEventsCount"
		if bytes.Contains(key, []byte("inks")) {
			bit, name = sfDroppedLinks, "droppedLinksCount"
		}
		if err := j.once(seen, bit, name); err != nil {
			return err
		}
		v, err := j.uintVal()
		if err != nil {
			return jat(name, err)
		}
		*size += optVarint(uint64(uint32(v)))
	default:
		return j.skip()
	}
	return nil
}

// spanAttrs reads a span's attributes into d.attrs, capped as DecodeProto
// caps them; those past the caps count as dropped in ex.
func (j *jsonDecoder) spanAttrs(sp *model.Span, ex **model.Extra, size *int) error {
	s, d := &j.s, j.d
	null, err := s.open('[')
	if err != nil {
		return jat("attributes", err)
	}
	for i := 0; !null; i++ {
		ok, err := s.nextElem(i)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		k, v, n, err := j.keyValue(true)
		if err != nil {
			return jatIndex("attributes", i, err)
		}
		*size += lenField(n)
		if !d.keepAttr(&d.attrs, sp, k, v, true) {
			extraOf(ex).DroppedAttrs++
		}
	}
	return nil
}

// spanEvents reads a span's events into ex, kept as DecodeProto keeps them.
func (j *jsonDecoder) spanEvents(sp *model.Span, ex **model.Extra, size *int) error {
	return j.spanList("events", size, func() (int, error) {
		ev, n, err := j.event(sp)
		if err == nil {
			j.d.keepEvent(extraOf(ex), sp, ev)
		}
		return n, err
	})
}

// spanLinks reads a span's links into ex, kept as DecodeProto keeps them.
func (j *jsonDecoder) spanLinks(sp *model.Span, ex **model.Extra, size *int) error {
	return j.spanList("links", size, func() (int, error) {
		ln, n, err := j.link(sp)
		if err == nil {
			j.d.keepLink(extraOf(ex), sp, ln)
		}
		return n, err
	})
}

// spanList reads the array field name of a span, elem reading and keeping
// each element and giving its message's size.
func (j *jsonDecoder) spanList(name string, size *int, elem func() (int, error)) error {
	s := &j.s
	null, err := s.open('[')
	if err != nil {
		return jat(name, err)
	}
	for i := 0; !null; i++ {
		ok, err := s.nextElem(i)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		n, err := elem()
		if err != nil {
			return jatIndex(name, i, err)
		}
		*size += lenField(n)
	}
	return nil
}

// spanStatus reads a span's status into sp and ex; a null one is absent.
func (j *jsonDecoder) spanStatus(sp *model.Span, ex **model.Extra, size *int) error {
	if null, err := j.isNull(); null || err != nil {
		return err
	}
	code, n, err := j.status(ex)
	if err != nil {
		return jat("status", err)
	}
	*size += lenField(n)
	if code != 0 {
		sp.Status = 0
		if code >= 0 && code <= int32(model.StatusError) {
			sp.Status = model.StatusCode(code)
		}
	}
	return nil
}

// status reads a Status object into the span's extra part; it returns the
// code and the Status message's size.
func (j *jsonDecoder) status(ex **model.Extra) (int32, int, error) {
	s := &j.s
	null, err := s.open('{')
	if err != nil || null {
		return 0, 0, err
	}
	var code int32
	size := 0
	var seen uint32
	for n := 0; ; n++ {
		key, ok, err := s.nextKey(n)
		if err != nil {
			return 0, 0, err
		}
		if !ok {
			break
		}
		switch string(key) {
		case "message":
			if err := j.once(&seen, 1, "message"); err != nil {
				return 0, 0, err
			}
			v, err := j.strVal()
			if err != nil {
				return 0, 0, jat("message", err)
			}
			if len(v) > 0 {
				size += lenField(len(v))
				extraOf(ex).StatusMessage = string(v)
			}
		case "code":
			if err := j.once(&seen, 2, "code"); err != nil {
				return 0, 0, err
			}
			if code, err = j.enumVal("STATUS_CODE_", statusEnum); err != nil {
				return 0, 0, jat("code", err)
			}
			size += optVarint(uint64(int64(code)))
		default:
			if err := j.skip(); err != nil {
				return 0, 0, err
			}
		}
	}
	return code, size, nil
}

func (j *jsonDecoder) event(sp *model.Span) (model.Event, int, error) {
	s, d := &j.s, j.d
	var ev model.Event
	size := 0
	d.sub.Reset()
	null, err := s.open('{')
	if err != nil {
		return ev, 0, err
	}
	var seen uint32
	for n := 0; !null; n++ {
		key, ok, err := s.nextKey(n)
		if err != nil {
			return ev, 0, err
		}
		if !ok {
			break
		}
		switch string(key) {
		case "timeUnixNano", "time_unix_nano":
			if err := j.once(&seen, 1, "timeUnixNano"); err != nil {
				return ev, 0, err
			}
			v, err := j.uintVal()
			if err != nil {
				return ev, 0, jat("timeUnixNano", err)
			}
			if v != 0 {
				ev.Time = int64(v)
				size += 9
			}
		case "name":
			if err := j.once(&seen, 2, "name"); err != nil {
				return ev, 0, err
			}
			v, err := j.strVal()
			if err != nil {
				return ev, 0, jat("name", err)
			}
			if len(v) > 0 {
				ev.Name = d.name(v)
				size += lenField(len(v))
				if string(v) == exceptionEvent {
					sp.SetFlags(model.FlagException)
				}
			}
		case "attributes":
			if err := j.once(&seen, 4, "attributes"); err != nil {
				return ev, 0, err
			}
			n, err := j.subAttrs(sp)
			if err != nil {
				return ev, 0, err
			}
			size += n
		case "droppedAttributesCount", "dropped_attributes_count":
			if err := j.once(&seen, 8, "droppedAttributesCount"); err != nil {
				return ev, 0, err
			}
			v, err := j.uintVal()
			if err != nil {
				return ev, 0, jat("droppedAttributesCount", err)
			}
			size += optVarint(uint64(uint32(v)))
		default:
			if err := j.skip(); err != nil {
				return ev, 0, err
			}
		}
	}
	ev.Attrs = d.sub.Attrs()
	return ev, size, nil
}

// subAttrs reads an event's or a link's attributes into d.sub, capped as
// DecodeProto caps them, and returns their encoded size.
func (j *jsonDecoder) subAttrs(sp *model.Span) (int, error) {
	s, d := &j.s, j.d
	null, err := s.open('[')
	if err != nil {
		return 0, jat("attributes", err)
	}
	size := 0
	for i := 0; !null; i++ {
		ok, err := s.nextElem(i)
		if err != nil {
			return 0, err
		}
		if !ok {
			break
		}
		k, v, n, err := j.keyValue(true)
		if err != nil {
			return 0, jatIndex("attributes", i, err)
		}
		size += lenField(n)
		d.keepAttr(&d.sub, sp, k, v, false)
	}
	return size, nil
}

func (j *jsonDecoder) link(sp *model.Span) (model.Link, int, error) {
	s, d := &j.s, j.d
	var ln model.Link
	size := 0
	d.sub.Reset()
	null, err := s.open('{')
	if err != nil {
		return ln, 0, err
	}
	var seen uint32
	for n := 0; !null; n++ {
		key, ok, err := s.nextKey(n)
		if err != nil {
			return ln, 0, err
		}
		if !ok {
			break
		}
		switch string(key) {
		case "traceId", "trace_id":
			if err := j.once(&seen, 1, "traceId"); err != nil {
				return ln, 0, err
			}
			n, err := j.hexID(ln.TraceID[:])
			if err != nil {
				return ln, 0, jat("traceId", err)
			}
			size += optLen(n)
		case "spanId", "span_id":
			if err := j.once(&seen, 2, "spanId"); err != nil {
				return ln, 0, err
			}
			n, err := j.hexID(ln.SpanID[:])
			if err != nil {
				return ln, 0, jat("spanId", err)
			}
			size += optLen(n)
		case "traceState", "trace_state":
			if err := j.once(&seen, 4, "traceState"); err != nil {
				return ln, 0, err
			}
			v, err := j.strNotKept()
			if err != nil {
				return ln, 0, jat("traceState", err)
			}
			size += optLen(len(v))
		case "attributes":
			if err := j.once(&seen, 8, "attributes"); err != nil {
				return ln, 0, err
			}
			n, err := j.subAttrs(sp)
			if err != nil {
				return ln, 0, err
			}
			size += n
		case "droppedAttributesCount", "dropped_attributes_count":
			if err := j.once(&seen, 16, "droppedAttributesCount"); err != nil {
				return ln, 0, err
			}
			v, err := j.uintVal()
			if err != nil {
				return ln, 0, jat("droppedAttributesCount", err)
			}
			size += optVarint(uint64(uint32(v)))
		case "flags":
			if err := j.once(&seen, 32, "flags"); err != nil {
				return ln, 0, err
			}
			v, err := j.uintVal()
			if err != nil {
				return ln, 0, jat("flags", err)
			}
			if uint32(v) != 0 {
				size += 1 + 4 // fixed32
			}
		default:
			if err := j.skip(); err != nil {
				return ln, 0, err
			}
		}
	}
	ln.Attrs = d.sub.Attrs()
	return ln, size, nil
}

// hexID reads a hex id into dst when it has dst's length (a wrong length
// leaves dst zero: the span is rejected, or the link keeps a zero id, as
// DecodeProto does) and returns the decoded length.
func (j *jsonDecoder) hexID(dst []byte) (int, error) {
	v, err := j.strVal()
	if err != nil || len(v) == 0 {
		return 0, err
	}
	if len(v)%2 == 0 {
		out := dst
		if len(v) != 2*len(dst) {
			j.id = slices.Grow(j.id[:0], len(v)/2)[:len(v)/2]
			out = j.id
		}
		ok := true
		for i := range out {
			hi, lo := unhex[v[2*i]], unhex[v[2*i+1]]
			ok = ok && hi != 0xff && lo != 0xff
			out[i] = hi<<4 | lo
		}
		if ok {
			return len(out), nil
		}
		clear(dst)
	}
	return 0, fmt.Errorf("%w %q: want hex digits (OTLP/JSON ids are hex, not base64)", ErrBadHexID, v)
}

// keyValue reads a KeyValue object: the key (interned when intern is set),
// the value, and the KeyValue message's encoded size. A null element is an
// empty KeyValue, as in the generated types.
func (j *jsonDecoder) keyValue(intern bool) (model.Str, value, int, error) {
	s := &j.s
	var k model.Str
	v := value{kind: model.ValEmpty} // until a value is read
	null, err := s.open('{')
	if err != nil {
		return 0, v, 0, err
	}
	keyLen, valSize, hasVal := 0, 0, false
	var seen uint32
	for n := 0; !null; n++ {
		key, ok, err := s.nextKey(n)
		if err != nil {
			return 0, v, 0, err
		}
		if !ok {
			break
		}
		switch string(key) {
		case "key":
			if err := j.once(&seen, 1, "key"); err != nil {
				return 0, v, 0, err
			}
			// The value may have been read already and may sit in the
			// value scratch: the key goes through the key scratch.
			kb, err := j.strInto(&j.s.kscr)
			if err != nil {
				return 0, v, 0, jat("key", err)
			}
			keyLen = len(kb)
			if intern {
				k = j.d.name(kb)
			}
		case "value":
			if err := j.once(&seen, 2, "value"); err != nil {
				return 0, v, 0, err
			}
			if null, err := j.isNull(); null || err != nil {
				if err != nil {
					return 0, v, 0, err
				}
				continue
			}
			if v, valSize, err = j.anyValue(0, false); err != nil {
				return 0, v, 0, jat("value", err)
			}
			hasVal = true
		default:
			if err := j.skip(); err != nil {
				return 0, v, 0, err
			}
		}
	}
	size := optLen(keyLen)
	if hasVal {
		size += lenField(valSize)
	}
	return k, v, size, nil
}

// setOneof refuses a second value in one AnyValue, as protojson does.
func (j *jsonDecoder) setOneof(set *string, name string) error {
	if *set != "" {
		return at(name, j.s.valErr(j.s.i, fmt.Errorf("%s is already set; an AnyValue holds one value", *set)))
	}
	*set = name
	return nil
}

// anyValue reads an AnyValue object at nesting depth and returns its
// encoded size. At the top (render false) it returns the value, arrays, maps
// and bytes as the text DecodeProto renders them; inside an array or map
// (render true) it appends that text to j.out, null for an empty value.
func (j *jsonDecoder) anyValue(depth int, render bool) (value, int, error) {
	s := &j.s
	v := value{kind: model.ValString}
	if depth >= maxDepth {
		return v, 0, errTooDeep
	}
	null, err := s.open('{')
	if err != nil {
		return v, 0, err
	}
	size := 0
	set := ""
	for n := 0; !null; n++ {
		key, ok, err := s.nextKey(n)
		if err != nil {
			return v, 0, err
		}
		if !ok {
			break
		}
		switch string(key) {
		case "stringValue", "string_value", "boolValue", "bool_value", "intValue", "int_value",
			"doubleValue", "double_value", "arrayValue", "array_value", "kvlistValue", "kvlist_value",
			"bytesValue", "bytes_value":
		default:
			if err := j.skip(); err != nil {
				return v, 0, err
			}
			continue
		}
		if null, err := j.isNull(); null || err != nil {
			if err != nil {
				return v, 0, err
			}
			continue
		}
		switch string(key) {
		case "stringValue", "string_value":
			if err := j.setOneof(&set, "stringValue"); err != nil {
				return v, 0, err
			}
			sv, err := j.strVal()
			if err != nil {
				return v, 0, jat("stringValue", err)
			}
			size = lenField(len(sv))
			if render {
				j.out = appendJSONString(j.out, sv)
			} else {
				v = value{kind: model.ValString, s: sv}
			}
		case "boolValue", "bool_value":
			if err := j.setOneof(&set, "boolValue"); err != nil {
				return v, 0, err
			}
			b, err := s.boolean()
			if err != nil {
				return v, 0, jat("boolValue", err)
			}
			size = 2
			if render {
				j.out = strconv.AppendBool(j.out, b)
			} else {
				v = value{kind: model.ValBool, b: b}
			}
		case "intValue", "int_value":
			if err := j.setOneof(&set, "intValue"); err != nil {
				return v, 0, err
			}
			i, err := j.intVal()
			if err != nil {
				return v, 0, jat("intValue", err)
			}
			size = 1 + protowire.SizeVarint(uint64(i))
			if render {
				j.out = strconv.AppendInt(j.out, i, 10)
			} else {
				v = value{kind: model.ValInt, i: i}
			}
		default:
			rv, n, err := j.anyRare(key, depth, render, &set)
			if err != nil {
				return v, 0, err
			}
			size = n
			if !render {
				v = rv
			}
		}
	}
	if set == "" {
		if render {
			j.out = append(j.out, "null"...)
		} else {
			v.kind = model.ValEmpty
		}
	}
	return v, size, nil
}

// anyRare decodes the AnyValue kinds Gym's attributes seldom carry
// (doubles, lists, maps, bytes), out of anyValue's switch so that its hot
// kinds stay one function. key is one of them; set is anyValue's oneof.
func (j *jsonDecoder) anyRare(key []byte, depth int, render bool, set *string) (value, int, error) {
	switch string(key) {
	case "doubleValue", "double_value":
		if err := j.setOneof(set, "doubleValue"); err != nil {
			return value{}, 0, err
		}
		f, err := j.floatVal()
		if err != nil {
			return value{}, 0, jat("doubleValue", err)
		}
		if render {
			j.out = appendFloat(j.out, f)
		}
		return value{kind: model.ValDouble, f: f}, 9, nil
	case "arrayValue", "array_value", "kvlistValue", "kvlist_value":
		isMap := key[0] == 'k'
		name := "arrayValue"
		if isMap {
			name = "kvlistValue"
		}
		if err := j.setOneof(set, name); err != nil {
			return value{}, 0, err
		}
		lv, n, err := j.listValue(depth, render, isMap)
		if err != nil {
			return value{}, 0, err
		}
		return lv, n, nil
	case "bytesValue", "bytes_value":
		if err := j.setOneof(set, "bytesValue"); err != nil {
			return value{}, 0, err
		}
		bv, n, err := j.bytesValue(render)
		if err != nil {
			return value{}, 0, err
		}
		return bv, n, nil
	}
	return value{}, 0, nil
}

// listValue reads an ArrayValue or KeyValueList (isMap) object: its
// compact text is j.out, after what is rendered already when render is set.
func (j *jsonDecoder) listValue(depth int, render, isMap bool) (value, int, error) {
	if !render {
		j.out = j.out[:0]
	}
	n, err := j.list(depth, isMap)
	if err != nil {
		return value{}, 0, err
	}
	v := value{kind: model.ValArray, s: j.out}
	if isMap {
		v.kind = model.ValMap
	}
	return v, lenField(n), nil
}

// bytesValue reads a base64 bytes value, kept (and rendered, when render is
// set) as the standard base64 of its bytes, as DecodeProto renders them.
func (j *jsonDecoder) bytesValue(render bool) (value, int, error) {
	s := &j.s
	start := s.i
	sv, err := j.strVal()
	if err != nil {
		return value{}, 0, jat("bytesValue", err)
	}
	if j.tmp, err = base64.StdEncoding.AppendDecode(j.tmp[:0], sv); err != nil {
		return value{}, 0, at("bytesValue", s.valErr(start, fmt.Errorf("bad base64: %w", err)))
	}
	size := lenField(len(j.tmp))
	if render {
		j.out = append(j.out, '"')
		j.out = base64.StdEncoding.AppendEncode(j.out, j.tmp)
		j.out = append(j.out, '"')
		return value{}, size, nil
	}
	j.out = base64.StdEncoding.AppendEncode(j.out[:0], j.tmp)
	return value{kind: model.ValBytes, s: j.out}, size, nil
}

// list reads an ArrayValue or KeyValueList object, appends its compact JSON
// text to j.out and returns the message's encoded size.
func (j *jsonDecoder) list(depth int, isMap bool) (int, error) {
	s := &j.s
	name, open, close := "arrayValue", byte('['), byte(']')
	if isMap {
		name, open, close = "kvlistValue", '{', '}'
	}
	null, err := s.open('{')
	if err != nil {
		return 0, jat(name, err)
	}
	j.out = append(j.out, open)
	size, cnt := 0, 0
	var seen uint32
	for n := 0; !null; n++ {
		key, ok, err := s.nextKey(n)
		if err != nil {
			return 0, err
		}
		if !ok {
			break
		}
		if string(key) != "values" {
			if err := j.skip(); err != nil {
				return 0, err
			}
			continue
		}
		if err := j.once(&seen, 1, name+".values"); err != nil {
			return 0, err
		}
		null, err := s.open('[')
		if err != nil {
			return 0, jat(name+".values", err)
		}
		for i := 0; !null; i++ {
			ok, err := s.nextElem(i)
			if err != nil {
				return 0, err
			}
			if !ok {
				break
			}
			if cnt > 0 {
				j.out = append(j.out, ',')
			}
			cnt++
			var m int
			if isMap {
				m, err = j.mapEntry(depth)
			} else {
				_, m, err = j.anyValue(depth+1, true)
			}
			if err != nil {
				return 0, jatIndex(name+".values", i, err)
			}
			size += lenField(m)
		}
	}
	j.out = append(j.out, close)
	return size, nil
}

// mapEntry reads one KeyValue of a KeyValueList and appends "key":value to
// j.out; a key given after its value is moved in front of it.
func (j *jsonDecoder) mapEntry(depth int) (int, error) {
	s := &j.s
	null, err := s.open('{')
	if err != nil {
		return 0, err
	}
	p := len(j.out)
	keyed, valued := false, false
	keyLen, valSize := 0, 0
	var seen uint32
	for n := 0; !null; n++ {
		key, ok, err := s.nextKey(n)
		if err != nil {
			return 0, err
		}
		if !ok {
			break
		}
		switch string(key) {
		case "key":
			if err := j.once(&seen, 1, "key"); err != nil {
				return 0, err
			}
			kb, err := j.strVal()
			if err != nil {
				return 0, jat("key", err)
			}
			keyLen, keyed = len(kb), true
			if valued {
				j.tmp = append(appendJSONString(j.tmp[:0], kb), ':')
				j.out = slices.Insert(j.out, p, j.tmp...)
			} else {
				j.out = append(appendJSONString(j.out, kb), ':')
			}
		case "value":
			if err := j.once(&seen, 2, "value"); err != nil {
				return 0, err
			}
			if null, err := j.isNull(); null || err != nil {
				if err != nil {
					return 0, err
				}
				continue
			}
			if _, valSize, err = j.anyValue(depth+1, true); err != nil {
				return 0, err
			}
			valued = true
		default:
			if err := j.skip(); err != nil {
				return 0, err
			}
		}
	}
	if !keyed {
		j.out = slices.Insert(j.out, p, '"', '"', ':')
	}
	if !valued {
		j.out = append(j.out, "null"...)
	}
	size := optLen(keyLen)
	if valued {
		size += lenField(valSize)
	}
	return size, nil
}

// strVal reads a string, or null as the empty string.
func (j *jsonDecoder) strVal() ([]byte, error) {
	return j.strInto(&j.s.vscr)
}

// skip passes over a value the store does not keep (an unknown field, or
// the resource's text read for its cache key). Strings repaired in it are
// not counted, as the protobuf decoder, which never reads such parts, does
// not count them: values_repaired is the same whichever encoding a sender
// uses. The record repairs them all the same.
func (j *jsonDecoder) skip() error {
	n := j.s.repaired
	err := j.s.skip()
	j.s.repaired = n
	return err
}

// strNotKept is strVal for a string the store does not keep (a trace
// state, a schema URL): see skip.
func (j *jsonDecoder) strNotKept() ([]byte, error) {
	n := j.s.repaired
	v, err := j.strVal()
	j.s.repaired = n
	return v, err
}

// strInto is strVal unescaping into scr.
func (j *jsonDecoder) strInto(scr *[]byte) ([]byte, error) {
	s := &j.s
	switch s.b[s.i] {
	case '"':
		return s.str(scr)
	case 'n':
		return nil, s.lit("null")
	}
	return nil, s.wrongType("a string")
}

// uintVal reads a uint64 (or uint32) written as a number or a string.
func (j *jsonDecoder) uintVal() (uint64, error) {
	s := &j.s
	start := s.i
	txt, raw, _, null, ok, err := s.scalar()
	if err != nil || null {
		return 0, err
	}
	if ok {
		if v, ok := parseUint(txt); ok {
			return v, nil
		}
	}
	return 0, s.valErr(start, fmt.Errorf("bad unsigned integer %s", raw))
}

// intVal reads an int64 written as a number or a string.
func (j *jsonDecoder) intVal() (int64, error) {
	s := &j.s
	start := s.i
	txt, raw, _, null, ok, err := s.scalar()
	if err != nil || null {
		return 0, err
	}
	if ok {
		if v, ok := parseInt(txt); ok {
			return v, nil
		}
	}
	return 0, s.valErr(start, fmt.Errorf("bad integer %s", raw))
}

// floatVal reads a double: a number, or a string holding a number, "NaN",
// "Infinity" or "-Infinity".
func (j *jsonDecoder) floatVal() (float64, error) {
	s := &j.s
	start := s.i
	txt, raw, isStr, null, ok, err := s.scalar()
	if err != nil || null {
		return 0, err
	}
	if ok {
		if isStr {
			switch string(txt) {
			case "NaN":
				return math.NaN(), nil
			case "Infinity":
				return math.Inf(1), nil
			case "-Infinity":
				return math.Inf(-1), nil
			}
		}
		if f, err := strconv.ParseFloat(string(txt), 64); err == nil {
			return f, nil
		}
	}
	return 0, s.valErr(start, fmt.Errorf("bad number %s", raw))
}

// enumVal reads an enum written as its number or its name; names match with
// or without the prefix, in any case (SPAN_KIND_SERVER, server).
func (j *jsonDecoder) enumVal(prefix string, names []string) (int32, error) {
	s := &j.s
	start := s.i
	if s.b[s.i] == '"' {
		name, err := s.str(&s.vscr)
		if err != nil || len(name) == 0 {
			return 0, err
		}
		if n, ok := resolveEnum(name, prefix, names); ok {
			return n, nil
		}
		want := make([]string, len(names))
		for i, n := range names {
			want[i] = prefix + n
		}
		return 0, fmt.Errorf("unknown value %q, want one of %s or a number", name, strings.Join(want, ", "))
	}
	txt, raw, _, null, ok, err := s.scalar()
	if err != nil || null {
		return 0, err
	}
	if ok {
		if n, err := strconv.ParseInt(string(txt), 10, 32); err == nil {
			return int32(n), nil
		}
	}
	return 0, s.valErr(start, fmt.Errorf("bad enum value %s", raw))
}

// resolveEnum maps an enum name to its number. strings.ToUpper is the
// reference; ASCII names, all real ones, take a path that does not allocate.
func resolveEnum(name []byte, prefix string, names []string) (int32, bool) {
	var buf [32]byte
	ascii := len(name) <= len(buf)
	for _, c := range name {
		if c >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		u := buf[:len(name)]
		for i, c := range name {
			if c >= 'a' && c <= 'z' {
				c -= 'a' - 'A'
			}
			u[i] = c
		}
		if len(u) >= len(prefix) && string(u[:len(prefix)]) == prefix {
			u = u[len(prefix):]
		}
		for i, n := range names {
			if string(u) == n {
				return int32(i), true
			}
		}
		return 0, false
	}
	up := strings.TrimPrefix(strings.ToUpper(string(name)), prefix)
	for i, n := range names {
		if up == n {
			return int32(i), true
		}
	}
	return 0, false
}

// parseUint parses a uint64 as the protobuf JSON mapping allows: decimal
// digits, or a number in another form (1e3) that is an exact integer.
func parseUint(txt []byte) (uint64, bool) {
	if len(txt) > 0 && len(txt) <= 19 {
		var v uint64
		for _, c := range txt {
			if c < '0' || c > '9' {
				return parseUintSlow(txt)
			}
			v = v*10 + uint64(c-'0')
		}
		return v, true
	}
	return parseUintSlow(txt)
}

func parseUintSlow(txt []byte) (uint64, bool) {
	if n, err := strconv.ParseUint(string(txt), 10, 64); err == nil {
		return n, true
	}
	f, err := strconv.ParseFloat(string(txt), 64)
	if err != nil || f < 0 || f != math.Trunc(f) || f >= 1<<64 {
		return 0, false
	}
	return uint64(f), true
}

// parseInt is parseUint for int64.
func parseInt(txt []byte) (int64, bool) {
	digits := txt
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) > 0 && len(digits) <= 18 {
		var v int64
		for _, c := range digits {
			if c < '0' || c > '9' {
				return parseIntSlow(txt)
			}
			v = v*10 + int64(c-'0')
		}
		if len(digits) < len(txt) {
			v = -v
		}
		return v, true
	}
	return parseIntSlow(txt)
}

func parseIntSlow(txt []byte) (int64, bool) {
	if n, err := strconv.ParseInt(string(txt), 10, 64); err == nil {
		return n, true
	}
	f, err := strconv.ParseFloat(string(txt), 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<63 {
		return 0, false
	}
	return int64(f), true
}

func pickSlice[T any](a, b []T) []T {
	if len(a) > 0 {
		return a
	}
	return b
}

// jsonErr adds the line and column to an encoding/json syntax error.
func jsonErr(b []byte, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	var off int64
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	default:
		return err
	}
	if off > int64(len(b)) {
		off = int64(len(b))
	}
	line := 1 + bytes.Count(b[:off], []byte{'\n'})
	// Offset counts the bytes read up to and including the bad one.
	col := max(int(off)-bytes.LastIndexByte(b[:off], '\n')-1, 1)
	return fmt.Errorf("at line %d, column %d: %w", line, col, err)
}
