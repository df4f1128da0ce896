package receiver

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"math"
	"strconv"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
)

// The record's protobuf-to-JSON conversion reads the wire bytes directly,
// so converting a request takes memory for its line and nothing else: the
// generated types take 5 to 20 times a request's size in small objects,
// which under --max-bytes made the record the largest use of memory.
// It handles the encoding every exporter produces (each singular field at
// most once, a oneof with one member); anything else, which the generated
// types read by merging, falls back to them (errIrregular), so both give
// the same line.

// errIrregular is wire data the direct conversion leaves to the generated
// types: a singular field repeated, a oneof with two members.
var errIrregular = errors.New("irregular protobuf encoding")

// wireRec converts one request; scratch holds repaired strings.
type wireRec struct {
	out     []byte
	scratch []byte
	depth   int
}

// appendTraceWireJSON appends the trace request b (protobuf wire bytes) as
// one OTLP/JSON line, as AppendTraceRequestJSON writes it from the
// generated types.
func appendTraceWireJSON(dst, b []byte) ([]byte, error) {
	w := wireRec{out: append(dst, `{"resourceSpans":[`...)}
	if _, err := w.elems(b, 1, w.resourceSpans); err != nil {
		return dst, err
	}
	return append(w.out, "]}"...), nil
}

// elems writes each element of the repeated message field num of b with
// one, commas between, and says how many there were.
func (w *wireRec) elems(b []byte, num protowire.Number, one func([]byte) error) (int, error) {
	n := 0
	err := eachField(b, func(f protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		if f != num || typ != protowire.BytesType {
			return nil
		}
		if n > 0 {
			w.out = append(w.out, ',')
		}
		n++
		return one(v)
	})
	return n, err
}

// eachField calls f for every field of message b in wire order: v holds a
// length-delimited payload, x a varint or fixed value.
func eachField(b []byte, f func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return errMalformed
		}
		b = b[n:]
		var (
			v []byte
			x uint64
		)
		switch typ {
		case protowire.BytesType:
			v, n = protowire.ConsumeBytes(b)
		case protowire.VarintType:
			x, n = protowire.ConsumeVarint(b)
		case protowire.Fixed64Type:
			x, n = protowire.ConsumeFixed64(b)
		case protowire.Fixed32Type:
			var y uint32
			y, n = protowire.ConsumeFixed32(b)
			x = uint64(y)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return errMalformed
		}
		b = b[n:]
		if err := f(num, typ, v, x); err != nil {
			return err
		}
	}
	return nil
}

// fields gathers the singular fields of one message by number (1-16): the
// JSON order differs from the wire order, so a message is read once to
// find them and written in the JSON order after.
type fields struct {
	seen uint32
	b    [17][]byte
	x    [17]uint64
}

// scan reads message b's singular fields of the wanted types (one bit per
// field number in each mask); a repeated one is irregular. Fields of other
// types, or numbers, are left to the caller or skipped, as the generated
// types skip a known field of the wrong wire type.
func (fs *fields) scan(b []byte, bytesMask, varintMask, fixed64Mask, fixed32Mask uint32) error {
	fs.seen = 0 // the values of fields not seen are stale: read them through bytes and num
	return eachField(b, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error {
		if num < 1 || num > 16 {
			return nil
		}
		bit := uint32(1) << num
		var mask uint32
		switch typ {
		case protowire.BytesType:
			mask = bytesMask
		case protowire.VarintType:
			mask = varintMask
		case protowire.Fixed64Type:
			mask = fixed64Mask
		case protowire.Fixed32Type:
			mask = fixed32Mask
		}
		if mask&bit == 0 {
			return nil
		}
		if fs.seen&bit != 0 {
			return errIrregular
		}
		fs.seen |= bit
		fs.b[num], fs.x[num] = v, x
		return nil
	})
}

func (fs *fields) has(num int) bool { return fs.seen&(1<<num) != 0 }

// bytes and num return field num's value, or zero when it is absent.
func (fs *fields) bytes(num int) []byte {
	if !fs.has(num) {
		return nil
	}
	return fs.b[num]
}

func (fs *fields) num(num int) uint64 {
	if !fs.has(num) {
		return 0
	}
	return fs.x[num]
}

func bits(nums ...int) uint32 {
	var m uint32
	for _, n := range nums {
		m |= 1 << n
	}
	return m
}

// Field masks of the messages the record writes.
var (
	rsBytes             = bits(1, 3) // resource, schema_url (scope_spans repeated)
	resVarint           = bits(2)    // dropped_attributes_count (attributes repeated)
	ssBytes             = bits(1, 3) // scope, schema_url (spans repeated)
	scopeBytes          = bits(1, 2) // name, version
	scopeVarint         = bits(4)    // dropped_attributes_count
	spanBytes           = bits(1, 2, 3, 4, 5, 15)
	spanVarint          = bits(6, 10, 12, 14) // kind, dropped counts
	spanFixed64         = bits(7, 8)          // start, end
	spanFixed32         = bits(16)            // flags
	eventBytes          = bits(2)
	eventVarint         = bits(4)
	eventFixed64        = bits(1)
	linkBytes           = bits(1, 2, 3)
	linkVarint          = bits(5)
	linkFixed32         = bits(6)
	statusBytes         = bits(2)
	statusVarint        = bits(3)
	kvBytes             = bits(1, 2)
	anyBytes            = bits(1, 5, 6, 7)
	anyVarint           = bits(2, 3)
	anyFixed64          = bits(4)
	anyMembers   uint32 = bits(1, 2, 3, 4, 5, 6, 7)
)

// str appends a string field as JSON, repaired as repairProtoStrings
// repairs it when it is not UTF-8.
func (w *wireRec) str(v []byte) {
	if !utf8.Valid(v) {
		w.scratch = appendRepaired(w.scratch[:0], v)
		v = w.scratch
	}
	w.out = appendValidJSONString(w.out, v)
}

// appendValidJSONString is appendJSONString for valid UTF-8, copying runs
// that need no escape at once: the record's hot loop.
func appendValidJSONString(dst, v []byte) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, v[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\t':
			dst = append(dst, '\\', 't')
		case '\r':
			dst = append(dst, '\\', 'r')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&15])
		}
		start = i + 1
	}
	dst = append(dst, v[start:]...)
	return append(dst, '"')
}

// wobj writes the members of one JSON object, adding commas.
type wobj struct {
	w *wireRec
	n int
}

func (o *wobj) key(k string) {
	if o.n > 0 {
		o.w.out = append(o.w.out, ',')
	}
	o.n++
	o.w.out = append(o.w.out, '"')
	o.w.out = append(o.w.out, k...)
	o.w.out = append(o.w.out, `":`...)
}

func (o *wobj) str(fs *fields, num int, k string) {
	if v := fs.bytes(num); len(v) > 0 {
		o.key(k)
		o.w.str(v)
	}
}

func (o *wobj) hexID(fs *fields, num int, k string) {
	if v := fs.bytes(num); len(v) > 0 {
		o.key(k)
		o.w.out = append(o.w.out, '"')
		o.w.out = hex.AppendEncode(o.w.out, v)
		o.w.out = append(o.w.out, '"')
	}
}

func (o *wobj) u64(fs *fields, num int, k string) {
	if v := fs.num(num); v != 0 {
		o.key(k)
		o.w.out = append(o.w.out, '"')
		o.w.out = strconv.AppendUint(o.w.out, v, 10)
		o.w.out = append(o.w.out, '"')
	}
}

// u32 writes a uint32 field, or an enum (int32 on the wire, written as the
// generated types' uint32 conversion of it).
func (o *wobj) u32(fs *fields, num int, k string, enum bool) {
	v := uint32(fs.num(num))
	if enum {
		v = uint32(int32(fs.num(num)))
	}
	if v != 0 {
		o.key(k)
		o.w.out = strconv.AppendUint(o.w.out, uint64(v), 10)
	}
}

// attrs writes the repeated KeyValue field num of message b, if any.
func (o *wobj) attrs(b []byte, num protowire.Number, k string) error {
	return o.list(b, num, k, o.w.keyValue)
}

// list writes the repeated message field num of b as a JSON array under k,
// each element by one; no member at all when the field is absent.
func (o *wobj) list(b []byte, num protowire.Number, k string, one func([]byte) error) error {
	mark, n0 := len(o.w.out), o.n
	o.key(k)
	o.w.out = append(o.w.out, '[')
	n, err := o.w.elems(b, num, one)
	if err == nil && n == 0 {
		o.w.out, o.n = o.w.out[:mark], n0 // the key goes again
		return nil
	}
	o.w.out = append(o.w.out, ']')
	return err
}

func (w *wireRec) resourceSpans(b []byte) error {
	var fs fields
	if err := fs.scan(b, rsBytes, 0, 0, 0); err != nil {
		return err
	}
	w.out = append(w.out, '{')
	o := wobj{w: w}
	if fs.has(1) {
		o.key("resource")
		res := fs.b[1]
		var rf fields
		if err := rf.scan(res, 0, resVarint, 0, 0); err != nil {
			return err
		}
		w.out = append(w.out, '{')
		ro := wobj{w: w}
		if err := ro.attrs(res, 1, "attributes"); err != nil {
			return err
		}
		ro.u32(&rf, 2, "droppedAttributesCount", false)
		w.out = append(w.out, '}')
	}
	if err := o.list(b, 2, "scopeSpans", w.scopeSpans); err != nil {
		return err
	}
	o.str(&fs, 3, "schemaUrl")
	w.out = append(w.out, '}')
	return nil
}

func (w *wireRec) scopeSpans(b []byte) error {
	var fs fields
	if err := fs.scan(b, ssBytes, 0, 0, 0); err != nil {
		return err
	}
	w.out = append(w.out, '{')
	o := wobj{w: w}
	if fs.has(1) {
		o.key("scope")
		sc := fs.b[1]
		var sf fields
		if err := sf.scan(sc, scopeBytes, scopeVarint, 0, 0); err != nil {
			return err
		}
		w.out = append(w.out, '{')
		so := wobj{w: w}
		so.str(&sf, 1, "name")
		so.str(&sf, 2, "version")
		if err := so.attrs(sc, 3, "attributes"); err != nil {
			return err
		}
		so.u32(&sf, 4, "droppedAttributesCount", false)
		w.out = append(w.out, '}')
	}
	if err := o.list(b, 2, "spans", w.span); err != nil {
		return err
	}
	o.str(&fs, 3, "schemaUrl")
	w.out = append(w.out, '}')
	return nil
}

func (w *wireRec) span(b []byte) error {
	var fs fields
	if err := fs.scan(b, spanBytes, spanVarint, spanFixed64, spanFixed32); err != nil {
		return err
	}
	w.out = append(w.out, '{')
	o := wobj{w: w}
	o.hexID(&fs, 1, "traceId")
	o.hexID(&fs, 2, "spanId")
	o.str(&fs, 3, "traceState")
	o.hexID(&fs, 4, "parentSpanId")
	o.u32(&fs, 16, "flags", false)
	o.str(&fs, 5, "name")
	o.u32(&fs, 6, "kind", true)
	o.u64(&fs, 7, "startTimeUnixNano")
	o.u64(&fs, 8, "endTimeUnixNano")
	if err := o.attrs(b, 9, "attributes"); err != nil {
		return err
	}
	o.u32(&fs, 10, "droppedAttributesCount", false)
	if err := o.list(b, 11, "events", w.event); err != nil {
		return err
	}
	o.u32(&fs, 12, "droppedEventsCount", false)
	if err := o.list(b, 13, "links", w.link); err != nil {
		return err
	}
	o.u32(&fs, 14, "droppedLinksCount", false)
	if fs.has(15) {
		var sf fields
		if err := sf.scan(fs.b[15], statusBytes, statusVarint, 0, 0); err != nil {
			return err
		}
		o.key("status")
		w.out = append(w.out, '{')
		so := wobj{w: w}
		so.str(&sf, 2, "message")
		so.u32(&sf, 3, "code", true)
		w.out = append(w.out, '}')
	}
	w.out = append(w.out, '}')
	return nil
}

func (w *wireRec) event(b []byte) error {
	var fs fields
	if err := fs.scan(b, eventBytes, eventVarint, eventFixed64, 0); err != nil {
		return err
	}
	w.out = append(w.out, '{')
	o := wobj{w: w}
	o.u64(&fs, 1, "timeUnixNano")
	o.str(&fs, 2, "name")
	if err := o.attrs(b, 3, "attributes"); err != nil {
		return err
	}
	o.u32(&fs, 4, "droppedAttributesCount", false)
	w.out = append(w.out, '}')
	return nil
}

func (w *wireRec) link(b []byte) error {
	var fs fields
	if err := fs.scan(b, linkBytes, linkVarint, 0, linkFixed32); err != nil {
		return err
	}
	w.out = append(w.out, '{')
	o := wobj{w: w}
	o.hexID(&fs, 1, "traceId")
	o.hexID(&fs, 2, "spanId")
	o.str(&fs, 3, "traceState")
	if err := o.attrs(b, 4, "attributes"); err != nil {
		return err
	}
	o.u32(&fs, 5, "droppedAttributesCount", false)
	o.u32(&fs, 6, "flags", false)
	w.out = append(w.out, '}')
	return nil
}

func (w *wireRec) keyValue(b []byte) error {
	var fs fields
	if err := fs.scan(b, kvBytes, 0, 0, 0); err != nil {
		return err
	}
	w.out = append(w.out, `{"key":`...)
	w.str(fs.bytes(1))
	w.out = append(w.out, `,"value":`...)
	if err := w.anyValue(fs.bytes(2)); err != nil {
		return err
	}
	w.out = append(w.out, '}')
	return nil
}

func (w *wireRec) anyValue(b []byte) error {
	w.depth++
	defer func() { w.depth-- }()
	if w.depth > maxDepth {
		return errIrregular // the generated types decide what is too deep
	}
	var fs fields
	if err := fs.scan(b, anyBytes, anyVarint, anyFixed64, 0); err != nil {
		return err
	}
	set := fs.seen & anyMembers
	if set&(set-1) != 0 {
		return errIrregular // two members of the oneof: the last wins there
	}
	switch {
	case fs.has(1):
		w.out = append(w.out, `{"stringValue":`...)
		w.str(fs.b[1])
	case fs.has(2):
		w.out = append(w.out, `{"boolValue":`...)
		w.out = strconv.AppendBool(w.out, fs.x[2] != 0)
	case fs.has(3):
		w.out = append(w.out, `{"intValue":"`...)
		w.out = strconv.AppendInt(w.out, int64(fs.x[3]), 10)
		w.out = append(w.out, '"')
	case fs.has(4):
		w.out = append(w.out, `{"doubleValue":`...)
		w.out = appendRecFloat(w.out, math.Float64frombits(fs.x[4]))
	case fs.has(7):
		w.out = append(w.out, `{"bytesValue":"`...)
		w.out = base64.StdEncoding.AppendEncode(w.out, fs.b[7])
		w.out = append(w.out, '"')
	case fs.has(5):
		w.out = append(w.out, `{"arrayValue":{"values":[`...)
		if _, err := w.elems(fs.b[5], 1, w.anyValue); err != nil {
			return err
		}
		w.out = append(w.out, "]}"...)
	case fs.has(6):
		w.out = append(w.out, `{"kvlistValue":{"values":[`...)
		if _, err := w.elems(fs.b[6], 1, w.keyValue); err != nil {
			return err
		}
		w.out = append(w.out, "]}"...)
	default:
		w.out = append(w.out, "{}"...)
		return nil
	}
	w.out = append(w.out, '}')
	return nil
}
