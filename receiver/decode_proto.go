package receiver

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/nemo-gym/gymtrace/model"
	"google.golang.org/protobuf/encoding/protowire"
)

// pathError is a decode error at a place in the message, e.g.
// resource_spans[0].scope_spans[1].spans[3]: truncated.
type pathError struct {
	path string
	err  error
}

func (e *pathError) Error() string { return e.path + ": " + e.err.Error() }
func (e *pathError) Unwrap() error { return e.err }

// at prefixes err's path with elem.
func at(elem string, err error) error {
	var pe *pathError
	if errors.As(err, &pe) {
		return &pathError{path: elem + "." + pe.path, err: pe.err}
	}
	return &pathError{path: elem, err: err}
}

func atIndex(field string, i int, err error) error {
	return at(field+"["+strconv.Itoa(i)+"]", err)
}

// errTruncated names a message that ends inside a field.
var errTruncated = errors.New("truncated")

// wireErr turns a protowire parse failure into a short cause.
func wireErr(n int) error {
	err := protowire.ParseError(n)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return errTruncated
	}
	return fmt.Errorf("bad tag or value: %w", err)
}

// field is one decoded protobuf field. For length-delimited fields b holds
// the payload; for varint and fixed fields v holds the value.
type field struct {
	num protowire.Number
	typ protowire.Type
	v   uint64
	b   []byte
}

// shortBytes reads the commonest field shape of OTLP at the start of b: a
// one-byte tag of a length-delimited field and a one-byte length. Small
// enough to be inlined where the hot loops call it, before nextField.
func shortBytes(b []byte) (num protowire.Number, l int, ok bool) {
	if len(b) >= 2 {
		if t := b[0]; t&0x87 == 2 && t > 7 && b[1] < 0x80 && int(b[1]) <= len(b)-2 {
			return protowire.Number(t >> 3), int(b[1]), true
		}
	}
	return 0, 0, false
}

// nextField consumes one field from b.
func nextField(b []byte) (field, []byte, error) {
	// Fast path for the common shapes of OTLP: a one-byte tag followed by a
	// one-byte length, a one-byte varint or eight fixed bytes.
	if len(b) >= 2 && b[0] < 0x80 && b[0]>>3 != 0 {
		num, typ := protowire.Number(b[0]>>3), protowire.Type(b[0]&7)
		switch typ {
		case protowire.BytesType:
			if l := int(b[1]); l < 0x80 {
				if 2+l <= len(b) {
					return field{num: num, typ: typ, b: b[2 : 2+l]}, b[2+l:], nil
				}
			} else if len(b) >= 3 && b[2] < 0x80 { // a two-byte length: spans, long values
				if l = l&0x7f | int(b[2])<<7; 3+l <= len(b) {
					return field{num: num, typ: typ, b: b[3 : 3+l]}, b[3+l:], nil
				}
			}
		case protowire.VarintType:
			if b[1] < 0x80 {
				return field{num: num, typ: typ, v: uint64(b[1])}, b[2:], nil
			}
		case protowire.Fixed64Type:
			if len(b) >= 9 {
				return field{num: num, typ: typ, v: binary.LittleEndian.Uint64(b[1:9])}, b[9:], nil
			}
		}
	}
	num, typ, n := protowire.ConsumeTag(b)
	if n < 0 {
		return field{}, nil, wireErr(n)
	}
	b = b[n:]
	f := field{num: num, typ: typ}
	switch typ {
	case protowire.VarintType:
		f.v, n = protowire.ConsumeVarint(b)
	case protowire.Fixed64Type:
		f.v, n = protowire.ConsumeFixed64(b)
	case protowire.Fixed32Type:
		var v uint32
		v, n = protowire.ConsumeFixed32(b)
		f.v = uint64(v)
	case protowire.BytesType:
		f.b, n = protowire.ConsumeBytes(b)
	default:
		n = protowire.ConsumeFieldValue(num, typ, b)
	}
	if n < 0 {
		return field{}, nil, wireErr(n)
	}
	return f, b[n:], nil
}

// DecodeProto decodes an OTLP ExportTraceServiceRequest (protobuf wire bytes)
// straight into compact spans, interning through l. It never keeps a
// reference to b. Invalid spans (wrong id lengths) are left out and counted
// in the Report; malformed wire data fails the whole request with an error
// naming the field path.
func DecodeProto(l *model.Local, b []byte, lim Limits) (model.Batch, Report, error) {
	d := getDecoder(l, lim)
	defer putDecoder(d)
	// Size the batch exactly: a count that skips every span body costs little
	// next to the decode, while a guess from the byte size over-allocates
	// several times over (spans are ~500 wire bytes), and the store copies
	// the batch, so the excess is pure garbage for the collector.
	n, err := countNested(b, []protowire.Number{1, 2, 2}, []string{"resource_spans", "scope_spans", "spans"})
	if err != nil {
		return model.Batch{}, d.rep, err
	}
	batch := model.NewBatch(n) // the store recycles its arrays
	d.spans, d.traces, d.parents = batch.Spans, batch.Traces, batch.Parents
	for i := 0; len(b) > 0; {
		f, rest, err := nextField(b)
		if err != nil {
			return model.Batch{}, d.rep, atIndex("resource_spans", i, err)
		}
		b = rest
		if f.num != 1 || f.typ != protowire.BytesType {
			continue
		}
		d.rs = i
		if err := d.resourceSpans(f.b); err != nil {
			return model.Batch{}, d.rep, atIndex("resource_spans", i, err)
		}
		i++
	}
	batch.Spans, batch.Traces, batch.Parents = d.spans, d.traces, d.parents
	return batch, d.rep, nil
}

func (d *decoder) resourceSpans(b []byte) error {
	var res model.ResourceID
	var scopes [][]byte
	// The resource may follow the scope spans on the wire; collect first.
	for len(b) > 0 {
		f, rest, err := nextField(b)
		if err != nil {
			return err
		}
		b = rest
		if f.typ != protowire.BytesType {
			continue
		}
		switch f.num {
		case 1:
			id, err := d.resource(f.b)
			if err != nil {
				return at("resource", err)
			}
			res = id
		case 2:
			scopes = append(scopes, f.b)
		}
	}
	for i, s := range scopes {
		d.ss = i
		if err := d.scopeSpans(s, res); err != nil {
			return atIndex("scope_spans", i, err)
		}
	}
	return nil
}

// resource interns a Resource message, cached by its bytes.
func (d *decoder) resource(raw []byte) (model.ResourceID, error) {
	if id, ok := d.res[string(raw)]; ok {
		return id, nil
	}
	d.sub.Reset()
	var service []byte
	b := raw
	for i := 0; len(b) > 0; {
		f, rest, err := nextField(b)
		if err != nil {
			return 0, err
		}
		b = rest
		if f.num != 1 || f.typ != protowire.BytesType {
			continue
		}
		k, v, err := d.keyValue(f.b, 0)
		if err != nil {
			return 0, atIndex("attributes", i, err)
		}
		d.addAttr(&d.sub, k, v)
		if k == d.svcKey && v.kind == model.ValString {
			service = append(service[:0], v.s...)
		}
		i++
	}
	attrs := d.sub.Sorted(d.l.Interner())
	id := d.l.Interner().InternResource(attrs, d.l.Intern(service))
	d.res[string(raw)] = id
	return id, nil
}

func (d *decoder) scopeSpans(b []byte, res model.ResourceID) error {
	for i := 0; len(b) > 0; {
		f, rest, err := nextField(b)
		if err != nil {
			return atIndex("spans", i, err)
		}
		b = rest
		if f.num != 2 || f.typ != protowire.BytesType {
			continue
		}
		// Decoded in place, in the batch's arrays: a Span is too big to
		// copy twice per span.
		k := len(d.spans)
		d.spans = append(d.spans, model.Span{})
		d.traces = append(d.traces, model.TraceID{})
		d.parents = append(d.parents, model.SpanID{})
		reason, err := d.span(&d.spans[k], &d.traces[k], &d.parents[k], f.b, res)
		if err != nil {
			return atIndex("spans", i, err)
		}
		if reason != "" {
			d.spans[k] = model.Span{} // the array may go back to the pool: hold nothing
			d.spans, d.traces, d.parents = d.spans[:k], d.traces[:k], d.parents[:k]
			d.rep.reject(fmt.Sprintf("resource_spans[%d].scope_spans[%d].spans[%d]: %s", d.rs, d.ss, i, reason))
		}
		i++
	}
	return nil
}

// span decodes one Span message into sp, which is zero, its trace id into
// trace and its parent's into parent, both zero. A non-empty reason means
// the span is invalid and must be rejected; err means the wire data is
// malformed.
func (d *decoder) span(sp *model.Span, trace *model.TraceID, parent *model.SpanID, b []byte, res model.ResourceID) (reason string, err error) {
	sp.Resource = res
	sp.Parent = -1
	sp.SetWireSize(len(b))
	var ex *model.Extra
	extra := func() *model.Extra {
		if ex == nil {
			ex = new(model.Extra)
		}
		return ex
	}
	tidLen, sidLen, pidBad := 0, 0, 0
	d.attrs.Reset()
	nattr, nev, nlink := 0, 0, 0
	for len(b) > 0 {
		var f field
		if num, l, ok := shortBytes(b); ok {
			f, b = field{num: num, typ: protowire.BytesType, b: b[2 : 2+l]}, b[2+l:]
		} else {
			var rest []byte
			var err error
			if f, rest, err = nextField(b); err != nil {
				return "", err
			}
			b = rest
		}
		switch f.typ {
		case protowire.BytesType:
			switch f.num {
			case 1:
				tidLen = len(f.b)
				copy(trace[:], f.b)
			case 2:
				sidLen = len(f.b)
				copy(sp.SpanID[:], f.b)
			case 4:
				if n := len(f.b); n != 8 && n != 0 {
					pidBad = n // a wrong parent rejects the span, whatever follows
				}
				*parent = model.SpanID{}
				copy(parent[:], f.b)
			case 5:
				sp.Name = d.name(d.repair(f.b))
			case 9:
				kept, err := d.spanAttr(sp, f.b)
				if err != nil {
					return "", atIndex("attributes", nattr, err)
				}
				nattr++
				if !kept {
					extra().DroppedAttrs++
				}
			case 11:
				ev, err := d.event(f.b, sp)
				if err != nil {
					return "", atIndex("events", nev, err)
				}
				nev++
				d.keepEvent(extra(), sp, ev)
			case 13:
				ln, err := d.link(f.b, sp)
				if err != nil {
					return "", atIndex("links", nlink, err)
				}
				nlink++
				d.keepLink(extra(), sp, ln)
			case 15:
				// Repeated message fields merge, as in proto.Merge: a later
				// status overrides only the fields it sets.
				msg, hasMsg, code, hasCode, err := spanStatus(f.b)
				if err != nil {
					return "", at("status", err)
				}
				if hasCode {
					sp.Status = code
				}
				if hasMsg {
					if len(msg) > 0 || ex != nil {
						extra().StatusMessage = string(d.repair(msg))
					}
				}
			}
		case protowire.VarintType:
			switch f.num {
			case 6:
				// The last kind wins, as in proto.Merge; one out of range
				// reads as unspecified, as the JSON decoder and the record
				// read it.
				sp.Kind = model.KindUnspecified
				if f.v <= uint64(model.KindConsumer) {
					sp.Kind = model.Kind(f.v)
				}
			case 10:
				if f.v > 0 {
					extra().DroppedAttrs += uint32(min(f.v, math.MaxUint32))
				}
			}
		case protowire.Fixed64Type:
			switch f.num {
			case 7:
				sp.Start = int64(f.v)
			case 8:
				sp.End = int64(f.v)
			}
		}
	}
	reason = spanIDsReason(*trace, sp.SpanID, tidLen, sidLen, pidBad)
	sp.Attrs = d.attrs.Attrs()
	sp.Extra = ex
	return reason, nil
}

func (d *decoder) event(b []byte, sp *model.Span) (model.Event, error) {
	var ev model.Event
	d.sub.Reset()
	for i := 0; len(b) > 0; {
		f, rest, err := nextField(b)
		if err != nil {
			return ev, err
		}
		b = rest
		switch {
		case f.num == 1 && f.typ == protowire.Fixed64Type:
			ev.Time = int64(f.v)
		case f.num == 2 && f.typ == protowire.BytesType:
			f.b = d.repair(f.b)
			ev.Name = d.name(f.b)
			if string(f.b) == exceptionEvent {
				sp.SetFlags(model.FlagException)
			}
		case f.num == 3 && f.typ == protowire.BytesType:
			k, v, err := d.keyValue(f.b, 0)
			if err != nil {
				return ev, atIndex("attributes", i, err)
			}
			i++
			d.keepAttr(&d.sub, sp, k, v, false)
		}
	}
	ev.Attrs = d.sub.Attrs()
	return ev, nil
}

func (d *decoder) link(b []byte, sp *model.Span) (model.Link, error) {
	var ln model.Link
	d.sub.Reset()
	for i := 0; len(b) > 0; {
		f, rest, err := nextField(b)
		if err != nil {
			return ln, err
		}
		b = rest
		if f.typ != protowire.BytesType {
			continue
		}
		switch f.num {
		case 1:
			if len(f.b) == 16 {
				copy(ln.TraceID[:], f.b)
			}
		case 2:
			if len(f.b) == 8 {
				copy(ln.SpanID[:], f.b)
			}
		case 4:
			k, v, err := d.keyValue(f.b, 0)
			if err != nil {
				return ln, atIndex("attributes", i, err)
			}
			i++
			d.keepAttr(&d.sub, sp, k, v, false)
		}
	}
	ln.Attrs = d.sub.Attrs()
	return ln, nil
}

func spanStatus(b []byte) (msg []byte, hasMsg bool, code model.StatusCode, hasCode bool, err error) {
	for len(b) > 0 {
		f, rest, err := nextField(b)
		if err != nil {
			return nil, false, 0, false, err
		}
		b = rest
		switch {
		case f.num == 2 && f.typ == protowire.BytesType:
			msg, hasMsg = f.b, true
		case f.num == 3 && f.typ == protowire.VarintType:
			code, hasCode = 0, true
			if f.v <= uint64(model.StatusError) {
				code = model.StatusCode(f.v)
			}
		}
	}
	return msg, hasMsg, code, hasCode, nil
}

// maxDepth bounds nested array and map values, so a hostile request cannot
// make the renderer recurse without end.
const maxDepth = 32

var errTooDeep = errors.New("values nested too deep")

// keyValue decodes a KeyValue message: the interned key and its value.
func (d *decoder) keyValue(b []byte, depth int) (model.Str, value, error) {
	var key []byte
	var raw []byte
	hasValue := false
	for len(b) > 0 {
		var f field
		if num, l, ok := shortBytes(b); ok {
			f, b = field{num: num, typ: protowire.BytesType, b: b[2 : 2+l]}, b[2+l:]
		} else {
			var rest []byte
			var err error
			if f, rest, err = nextField(b); err != nil {
				return 0, value{}, err
			}
			b = rest
		}
		if f.typ != protowire.BytesType {
			continue
		}
		switch f.num {
		case 1:
			key = f.b
		case 2:
			raw, hasValue = f.b, true
		}
	}
	k := d.name(d.repair(key))
	if !hasValue {
		return k, value{kind: model.ValEmpty}, nil
	}
	v, err := d.anyValue(raw)
	if err != nil {
		return k, v, at("value", err)
	}
	return k, v, nil
}

// anyValue decodes an AnyValue; arrays, maps and bytes become their text.
func (d *decoder) anyValue(b []byte) (value, error) {
	v := value{kind: model.ValEmpty} // until a member is read
	var nested []byte
	for len(b) > 0 {
		var f field
		if num, l, ok := shortBytes(b); ok {
			f, b = field{num: num, typ: protowire.BytesType, b: b[2 : 2+l]}, b[2+l:]
		} else {
			var rest []byte
			var err error
			if f, rest, err = nextField(b); err != nil {
				return v, err
			}
			b = rest
		}
		switch {
		case f.num == 1 && f.typ == protowire.BytesType:
			v = value{kind: model.ValString, s: d.repairValue(f.b)}
		case f.num == 2 && f.typ == protowire.VarintType:
			v = value{kind: model.ValBool, b: f.v != 0}
		case f.num == 3 && f.typ == protowire.VarintType:
			v = value{kind: model.ValInt, i: int64(f.v)}
		case f.num == 4 && f.typ == protowire.Fixed64Type:
			v = value{kind: model.ValDouble, f: math.Float64frombits(f.v)}
		case f.num == 5 && f.typ == protowire.BytesType:
			v, nested = value{kind: model.ValArray}, f.b
		case f.num == 6 && f.typ == protowire.BytesType:
			v, nested = value{kind: model.ValMap}, f.b
		case f.num == 7 && f.typ == protowire.BytesType:
			v = value{kind: model.ValBytes, s: f.b}
		}
	}
	switch v.kind {
	case model.ValArray, model.ValMap:
		var err error
		d.text, err = renderList(d.text[:0], nested, v.kind == model.ValMap, 0, &d.rep.ValuesRepaired)
		if err != nil {
			return v, err
		}
		v.s = d.text
	case model.ValBytes:
		d.text = base64.StdEncoding.AppendEncode(d.text[:0], v.s)
		v.s = d.text
	}
	return v, nil
}

// renderList renders an ArrayValue or KeyValueList as compact JSON text, the
// form every decoder keeps such values in, so the same value compares equal
// whichever format it arrived in.
func renderList(dst, b []byte, isMap bool, depth int, repaired *int) ([]byte, error) {
	// depth is the list's own value's depth; its elements are one deeper.
	// The JSON decoder counts the same way: a value nested 32 deep is
	// refused by both.
	if depth+1 >= maxDepth {
		return dst, errTooDeep
	}
	open, close := byte('['), byte(']')
	if isMap {
		open, close = '{', '}'
	}
	dst = append(dst, open)
	first := true
	for len(b) > 0 {
		f, rest, err := nextField(b)
		if err != nil {
			return dst, err
		}
		b = rest
		if f.num != 1 || f.typ != protowire.BytesType {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		if isMap {
			var key, val []byte
			kv := f.b
			for len(kv) > 0 {
				g, r, err := nextField(kv)
				if err != nil {
					return dst, err
				}
				kv = r
				if g.typ == protowire.BytesType && g.num == 1 {
					key = g.b
				} else if g.typ == protowire.BytesType && g.num == 2 {
					val = g.b
				}
			}
			if !utf8.Valid(key) {
				*repaired++ // appendJSONString writes U+FFFD
			}
			dst = appendJSONString(dst, key)
			dst = append(dst, ':')
			if dst, err = renderAny(dst, val, depth+1, repaired); err != nil {
				return dst, err
			}
			continue
		}
		if dst, err = renderAny(dst, f.b, depth+1, repaired); err != nil {
			return dst, err
		}
	}
	return append(dst, close), nil
}

// renderAny renders one AnyValue inside an array or map.
func renderAny(dst, b []byte, depth int, repaired *int) ([]byte, error) {
	var last field
	set := false
	for len(b) > 0 {
		f, rest, err := nextField(b)
		if err != nil {
			return dst, err
		}
		b = rest
		if f.num >= 1 && f.num <= 7 {
			last, set = f, true
		}
	}
	if !set {
		return append(dst, "null"...), nil
	}
	f := last
	switch {
	case f.num == 1 && f.typ == protowire.BytesType:
		if !utf8.Valid(f.b) {
			*repaired++ // appendJSONString writes U+FFFD
		}
		return appendJSONString(dst, f.b), nil
	case f.num == 2 && f.typ == protowire.VarintType:
		return strconv.AppendBool(dst, f.v != 0), nil
	case f.num == 3 && f.typ == protowire.VarintType:
		return strconv.AppendInt(dst, int64(f.v), 10), nil
	case f.num == 4 && f.typ == protowire.Fixed64Type:
		return appendFloat(dst, math.Float64frombits(f.v)), nil
	case f.num == 5 && f.typ == protowire.BytesType:
		return renderList(dst, f.b, false, depth, repaired)
	case f.num == 6 && f.typ == protowire.BytesType:
		return renderList(dst, f.b, true, depth, repaired)
	case f.num == 7 && f.typ == protowire.BytesType:
		dst = append(dst, '"')
		dst = base64.StdEncoding.AppendEncode(dst, f.b)
		return append(dst, '"'), nil
	}
	return append(dst, "null"...), nil
}

// countNested walks a protobuf message along path (a field number per level,
// each a repeated message) and counts the messages at the last level.
func countNested(b []byte, path []protowire.Number, names []string) (int, error) {
	n := 0
	for i := 0; len(b) > 0; {
		f, rest, err := nextField(b)
		if err != nil {
			return n, atIndex(names[0], i, err)
		}
		b = rest
		if f.num != path[0] || f.typ != protowire.BytesType {
			continue
		}
		if len(path) == 1 {
			n++
		} else {
			m, err := countNested(f.b, path[1:], names[1:])
			if err != nil {
				return n, atIndex(names[0], i, err)
			}
			n += m
		}
		i++
	}
	return n, nil
}

// CountMetricPoints counts the data points in a protobuf
// ExportMetricsServiceRequest; metrics are counted, not stored.
func CountMetricPoints(b []byte) (int, error) {
	return MetricPointsByName(b, nil)
}

// MetricPointsByName walks a protobuf ExportMetricsServiceRequest and calls
// fn (when not nil) once per Metric message with its name and its number of
// data points, then returns the total. name aliases b and is valid only
// during the call. The walk allocates nothing: the concurrency group's
// signal is a metric, and a busy fleet sends many points. On a malformed
// message it returns what it counted before the error.
func MetricPointsByName(b []byte, fn func(name []byte, points int)) (int, error) {
	n := 0
	for i := 0; len(b) > 0; {
		f, rest, err := nextField(b)
		if err != nil {
			return n, atIndex("resource_metrics", i, err)
		}
		b = rest
		if f.num != 1 || f.typ != protowire.BytesType {
			continue
		}
		// ResourceMetrics.scope_metrics (2) → ScopeMetrics.metrics (2).
		rm := f.b
		for j := 0; len(rm) > 0; {
			g, r, err := nextField(rm)
			if err != nil {
				return n, atIndex("resource_metrics", i, atIndex("scope_metrics", j, err))
			}
			rm = r
			if g.num != 2 || g.typ != protowire.BytesType {
				continue
			}
			m, err := countMetrics(g.b, fn)
			n += m
			if err != nil {
				return n, atIndex("resource_metrics", i, atIndex("scope_metrics", j, err))
			}
			j++
		}
		i++
	}
	return n, nil
}

// countMetrics counts the points of every Metric in a ScopeMetrics message,
// reporting each Metric to fn when fn is not nil.
func countMetrics(b []byte, fn func(name []byte, points int)) (int, error) {
	n := 0
	for i := 0; len(b) > 0; {
		f, rest, err := nextField(b)
		if err != nil {
			return n, atIndex("metrics", i, err)
		}
		b = rest
		if f.num != 2 || f.typ != protowire.BytesType {
			continue
		}
		var name []byte
		points := 0
		for m := f.b; len(m) > 0; {
			g, r, err := nextField(m)
			if err != nil {
				return n, atIndex("metrics", i, err)
			}
			m = r
			// name 1; gauge 5, sum 7, histogram 9, exponential_histogram 10,
			// summary 11, each holding its data_points in field 1.
			switch g.num {
			case 1:
				if g.typ == protowire.BytesType {
					name = g.b
				}
			case 5, 7, 9, 10, 11:
				if g.typ != protowire.BytesType {
					continue
				}
				k, err := countNested(g.b, []protowire.Number{1}, []string{"data_points"})
				if err != nil {
					return n, atIndex("metrics", i, err)
				}
				points += k
			}
		}
		n += points
		if fn != nil {
			fn(name, points)
		}
		i++
	}
	return n, nil
}

// CountLogRecords counts the log records in a protobuf
// ExportLogsServiceRequest; logs are counted, not stored.
func CountLogRecords(b []byte) (int, error) {
	return countNested(b, []protowire.Number{1, 2, 2}, []string{"resource_logs", "scope_logs", "log_records"})
}
