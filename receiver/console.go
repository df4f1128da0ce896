package receiver

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/nemo-gym/gymtrace/model"
	"google.golang.org/protobuf/encoding/protowire"
)

// The console reader parses NeMo Gym console logs: one OpenTelemetry Python
// SDK ReadableSpan.to_json(indent=None) object per line, mixed with metric
// and log records and plain server output. A hand-rolled scanner reads the
// span shape directly (ids "0x…", kind "SpanKind.SERVER", ISO 8601 times)
// without building generic maps, because a day of logs holds millions of
// spans and opening them should take seconds.

// recordKind says what one JSON line turned out to hold.
type recordKind uint8

const (
	recSpan       recordKind = iota // a console span (one model.Span)
	recOTLPTraces                   // an OTLP/JSON ExportTraceServiceRequest
	recMetrics                      // metrics: OTLP/JSON or the SDK's console form
	recLogs                         // an OTLP/JSON ExportLogsServiceRequest
	recLogRecord                    // one console log record (the SDK's LogRecord.to_json)
	recOther                        // JSON that is none of the above
)

// errNotJSON marks a line that is not a JSON object at all (plain output).
var errNotJSON = errors.New("not a JSON object")

// consoleDecoder parses console lines into spans. Not safe for concurrent use.
type consoleDecoder struct {
	*decoder
	s       scan
	scratch []byte // unescaped strings of the current line
	// span keys seen in the current line, for the span/other decision
	keys uint16
	// dropped counts span attributes cut by MaxAttrs in the current line
	dropped int
	// parent is the current line's parent span id, zero for a root.
	parent model.SpanID
	// recent holds the last resources' texts: a process repeats its
	// resource, about half of a span's line, on every line.
	recent     [8]recentResource
	recentNext int
}

type recentResource struct {
	raw []byte
	id  model.ResourceID
}

func newConsoleDecoder(l *model.Local, lim Limits) *consoleDecoder {
	return &consoleDecoder{decoder: getDecoder(l, lim)}
}

func (c *consoleDecoder) release() {
	putDecoder(c.decoder)
	c.decoder = nil
}

const (
	keyName = 1 << iota
	keyContext
	keyKind
	keyStart
)

// line parses one line. For recSpan it returns the span and its trace id;
// for the other kinds the caller decodes the line with the matching
// OTLP/JSON function.
func (c *consoleDecoder) line(b []byte) (model.Span, model.TraceID, recordKind, error) {
	c.s.setLine(b)
	c.scratch = c.scratch[:0]
	c.keys = 0
	c.dropped = 0
	c.parent = model.SpanID{}
	s := &c.s
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		return model.Span{}, model.TraceID{}, recOther, errNotJSON
	}
	ln := lineSpan{sp: model.Span{Parent: -1}, kind: recOther}
	c.decoder.attrs.Reset()
	err := s.object(func(key []byte) error { return c.field(&ln, key) })
	if err == errStop {
		return model.Span{}, model.TraceID{}, ln.kind, nil
	}
	if err != nil {
		return model.Span{}, model.TraceID{}, recOther, err
	}
	s.ws()
	if s.i != len(s.b) {
		return model.Span{}, model.TraceID{}, recOther, fmt.Errorf("column %d: unexpected data after the object", s.i+1)
	}
	if c.keys&(keyName|keyContext) != keyName|keyContext {
		return model.Span{}, model.TraceID{}, recOther, nil
	}
	if ln.trace.IsZero() || ln.sp.SpanID.IsZero() {
		return model.Span{}, model.TraceID{}, recOther, errors.New("context: trace_id and span_id are required")
	}
	c.finish(&ln)
	return ln.sp, ln.trace, recSpan, nil
}

// lineSpan is one line's span while its keys are read.
type lineSpan struct {
	sp    model.Span
	trace model.TraceID
	ex    *model.Extra
	// size is the span's size as the Python OTLP exporter would encode it.
	size int
	kind recordKind // what the line holds, once a key tells
}

// extra returns the span's rare fields, made on first use.
func (ln *lineSpan) extra() *model.Extra {
	if ln.ex == nil {
		ln.ex = new(model.Extra)
	}
	return ln.ex
}

// field reads the value of one key of the line's object. A key of another
// record (OTLP/JSON, metrics, a log record) stops the line with errStop,
// ln.kind saying which.
func (c *consoleDecoder) field(ln *lineSpan, key []byte) error {
	s, d := &c.s, c.decoder
	switch string(key) {
	case "name":
		v, err := c.str()
		if err != nil {
			return err
		}
		ln.sp.Name = d.l.Intern(v)
		ln.size += tagged(5, len(v))
		c.keys |= keyName
	case "context":
		var err error
		ln.trace, ln.sp.SpanID, err = c.context()
		if err != nil {
			return err
		}
		ln.size += tagged(1, 16) + tagged(2, 8)
		c.keys |= keyContext
	case "kind":
		return c.kindField(ln)
	case "parent_id":
		return c.parentField(ln)
	case "start_time", "end_time":
		return c.timeField(ln, key[0] == 's')
	case "status":
		return c.statusField(ln)
	case "attributes":
		n, err := c.attributes(&d.attrs, &ln.sp, true)
		if err != nil {
			return err
		}
		ln.size += n
	case "events":
		if s.null() {
			return nil
		}
		return s.array(func(i int) error {
			ev, n, err := c.event(&ln.sp)
			if err != nil {
				return atIndex("events", i, err)
			}
			ex := ln.extra()
			ex.Events = append(ex.Events, ev)
			ln.size += tagged(11, n)
			return nil
		})
	case "links":
		if s.null() {
			return nil
		}
		return s.array(func(i int) error {
			l, n, err := c.link(&ln.sp)
			if err != nil {
				return atIndex("links", i, err)
			}
			ex := ln.extra()
			ex.Links = append(ex.Links, l)
			ln.size += tagged(13, n)
			return nil
		})
	case "resource":
		id, err := c.resource()
		if err != nil {
			return err
		}
		ln.sp.Resource = id
	case "resource_spans", "resourceSpans":
		ln.kind = recOTLPTraces
		return errStop
	case "resource_metrics", "resourceMetrics":
		ln.kind = recMetrics
		return errStop
	case "resource_logs", "resourceLogs":
		ln.kind = recLogs
		return errStop
	case "body", "severity_text", "severity_number":
		ln.kind = recLogRecord
		return errStop
	default:
		return s.skip()
	}
	return nil
}

// kindField reads "kind": "SpanKind.SERVER" and the like.
func (c *consoleDecoder) kindField(ln *lineSpan) error {
	v, err := c.str()
	if err != nil {
		return err
	}
	k, ok := parseKind(v)
	if !ok {
		return fmt.Errorf("unknown span kind %q", v)
	}
	ln.sp.Kind = k
	if k != 0 {
		ln.size += 2
	}
	c.keys |= keyKind
	return nil
}

// parentField reads "parent_id", null for a root.
func (c *consoleDecoder) parentField(ln *lineSpan) error {
	if c.s.null() {
		return nil
	}
	v, err := c.str()
	if err != nil {
		return err
	}
	if !parseHexID(c.parent[:], v) {
		return fmt.Errorf("bad span id %q", v)
	}
	if !c.parent.IsZero() {
		ln.size += tagged(4, 8)
	}
	return nil
}

// timeField reads "start_time" (start) or "end_time", ISO 8601 or null.
func (c *consoleDecoder) timeField(ln *lineSpan, start bool) error {
	if c.s.null() {
		return nil
	}
	v, err := c.str()
	if err != nil {
		return err
	}
	t, err := parseISO(v)
	if err != nil {
		return err
	}
	if start {
		ln.sp.Start = t
		c.keys |= keyStart
	} else {
		ln.sp.End = t
	}
	ln.size += 9
	return nil
}

// statusField reads "status": its code and description.
func (c *consoleDecoder) statusField(ln *lineSpan) error {
	if c.s.null() {
		return nil
	}
	code, msg, err := c.status()
	if err != nil {
		return err
	}
	ln.sp.Status = code
	inner := 0
	if code != 0 {
		inner += 2
	}
	if len(msg) > 0 {
		inner += tagged(2, len(msg))
		ln.extra().StatusMessage = string(msg)
	}
	ln.size += tagged(15, inner)
	return nil
}

// finish completes a span whose keys are all read: its attributes, what
// was dropped, and its size.
func (c *consoleDecoder) finish(ln *lineSpan) {
	d := c.decoder
	if d.attrs.Count() > 0 {
		ln.sp.Attrs = d.attrs.Attrs()
	}
	if ln.sp.Flags()&model.FlagAttrsCapped != 0 {
		ln.extra().DroppedAttrs = uint32(c.dropped)
	}
	c.dropped = 0
	ln.sp.Extra = ln.ex
	// The Python OTLP exporter always sends flags (fixed32) and a status.
	ln.size += 6
	if ln.sp.Status == 0 && (ln.ex == nil || ln.ex.StatusMessage == "") {
		ln.size += 2
	}
	ln.sp.SetWireSize(ln.size)
}

var errStop = errors.New("stop")

// tagged is the encoded size of a length-delimited field with a one-byte tag.
func tagged(num int, n int) int {
	t := 1
	if num >= 16 {
		t = 2
	}
	return t + protowire.SizeVarint(uint64(n)) + n
}

var kindByName = map[string]model.Kind{
	"SpanKind.INTERNAL": model.KindInternal, "SpanKind.SERVER": model.KindServer,
	"SpanKind.CLIENT": model.KindClient, "SpanKind.PRODUCER": model.KindProducer,
	"SpanKind.CONSUMER": model.KindConsumer,
}

func parseKind(v []byte) (model.Kind, bool) {
	if k, ok := kindByName[string(v)]; ok {
		return k, true
	}
	s := string(bytes.TrimPrefix(bytes.TrimPrefix(v, []byte("SpanKind.")), []byte("SPAN_KIND_")))
	for i, n := range kindEnum {
		if s == n {
			return model.Kind(i), true
		}
	}
	return 0, false
}

// str reads a string value, unescaped.
func (c *consoleDecoder) str() ([]byte, error) {
	v, scr, err := c.s.str(c.scratch)
	c.scratch = scr
	return v, err
}

// parseHexID is model.ParseTraceID and ParseSpanID over bytes: exactly
// 2*len(dst) hex digits after an optional 0x, without a string per id.
func parseHexID(dst, v []byte) bool {
	if len(v) >= 2 && v[0] == '0' && (v[1] == 'x' || v[1] == 'X') {
		v = v[2:]
	}
	if len(v) != 2*len(dst) {
		return false
	}
	for i := range dst {
		hi, lo := unhex[v[2*i]], unhex[v[2*i+1]]
		if hi == 0xff || lo == 0xff {
			return false
		}
		dst[i] = hi<<4 | lo
	}
	return true
}

// context reads {"trace_id": "0x…", "span_id": "0x…", "trace_state": …}.
func (c *consoleDecoder) context() (tid model.TraceID, sid model.SpanID, err error) {
	if c.sdkContext(&tid, &sid) {
		return tid, sid, nil
	}
	err = c.s.object(func(key []byte) error {
		switch string(key) {
		case "trace_id":
			v, err := c.str()
			if err != nil {
				return err
			}
			if !parseHexID(tid[:], v) {
				return at("trace_id", fmt.Errorf("bad trace id %q", v))
			}
		case "span_id":
			v, err := c.str()
			if err != nil {
				return err
			}
			if !parseHexID(sid[:], v) {
				return at("span_id", fmt.Errorf("bad span id %q", v))
			}
		default:
			return c.s.skip()
		}
		return nil
	})
	if err != nil {
		return tid, sid, at("context", err)
	}
	return tid, sid, nil
}

// The Python SDK writes every span context alike: the ids in its own form
// are read straight; anything else (other spacing, order or trace state)
// goes through the object walk, which would read the same.
const (
	sdkTraceID = `{"trace_id": "0x`
	sdkSpanID  = `", "span_id": "0x`
	sdkCtxEnd  = `", "trace_state": "[]"}`
)

// sdkContext reads a context written as the SDK writes it, if it is one.
func (c *consoleDecoder) sdkContext(tid *model.TraceID, sid *model.SpanID) bool {
	s := &c.s
	s.ws()
	b := s.b[s.i:]
	const n = len(sdkTraceID) + 32 + len(sdkSpanID) + 16 + len(sdkCtxEnd)
	if len(b) < n || string(b[:len(sdkTraceID)]) != sdkTraceID {
		return false
	}
	b = b[len(sdkTraceID):]
	var t model.TraceID
	var p model.SpanID
	if !parseHexID(t[:], b[:32]) || string(b[32:32+len(sdkSpanID)]) != sdkSpanID {
		return false
	}
	b = b[32+len(sdkSpanID):]
	if !parseHexID(p[:], b[:16]) || string(b[16:16+len(sdkCtxEnd)]) != sdkCtxEnd {
		return false
	}
	*tid, *sid = t, p
	s.i += n
	return true
}

func (c *consoleDecoder) status() (model.StatusCode, []byte, error) {
	var code model.StatusCode
	var msg []byte
	err := c.s.object(func(key []byte) error {
		switch string(key) {
		case "status_code":
			v, err := c.str()
			if err != nil {
				return err
			}
			s := string(bytes.TrimPrefix(bytes.TrimPrefix(v, []byte("StatusCode.")), []byte("STATUS_CODE_")))
			switch s {
			case "UNSET":
				code = model.StatusUnset
			case "OK":
				code = model.StatusOK
			case "ERROR":
				code = model.StatusError
			default:
				return fmt.Errorf("unknown status code %q", v)
			}
		case "description":
			if c.s.null() {
				return nil
			}
			v, err := c.str()
			if err != nil {
				return err
			}
			msg = v
		default:
			return c.s.skip()
		}
		return nil
	})
	if err != nil {
		return 0, nil, at("status", err)
	}
	return code, msg, nil
}

// attributes reads a {"key": value, ...} object into ab and returns the
// encoded size of the attributes as OTLP KeyValues (field 9 of a span, 3 of
// an event, 4 of a link: all one-byte tags). onSpan marks span attributes,
// which carry the truncated marker and the dropped count.
func (c *consoleDecoder) attributes(ab *model.AttrBuilder, sp *model.Span, onSpan bool) (int, error) {
	if c.s.null() {
		return 0, nil
	}
	d := c.decoder
	size := 0
	err := c.s.object(func(key []byte) error {
		k := d.l.Intern(key)
		v, n, err := c.value(0)
		if err != nil {
			return at(strconv.Quote(string(key)), err)
		}
		size += tagged(9, tagged(1, len(key))+tagged(2, n))
		if !d.keepAttr(ab, sp, k, v, onSpan) && onSpan {
			c.dropped++
		}
		return nil
	})
	if err != nil {
		return 0, at("attributes", err)
	}
	return size, nil
}

// value reads one attribute value and returns it with its encoded AnyValue
// size. Arrays and objects become their compact JSON text, the same text the
// protobuf decoder renders.
func (c *consoleDecoder) value(depth int) (value, int, error) {
	s := &c.s
	s.ws()
	if s.i >= len(s.b) {
		return value{}, 0, errTruncatedLine
	}
	switch ch := s.b[s.i]; {
	case ch == '"':
		v, err := c.str()
		return value{kind: model.ValString, s: v}, tagged(1, len(v)), err
	case ch == 't' || ch == 'f':
		if s.lit("true") {
			return value{kind: model.ValBool, b: true}, 2, nil
		}
		if s.lit("false") {
			return value{kind: model.ValBool}, 2, nil
		}
	case ch == 'n':
		if s.lit("null") {
			return value{kind: model.ValString}, 0, nil
		}
	case ch == '[' || ch == '{':
		start := 0
		var n int
		var err error
		c.text, n, err = c.render(c.text[:0], depth)
		if err != nil {
			return value{}, 0, err
		}
		kind, num := model.ValArray, 5
		if ch == '{' {
			kind, num = model.ValMap, 6
		}
		v := value{kind: kind, s: c.text[start:]}
		return v, tagged(num, n), nil
	default:
		num, isFloat, err := s.number()
		if err != nil {
			return value{}, 0, err
		}
		if !isFloat {
			if i, err := consoleInt(num); err == nil {
				return value{kind: model.ValInt, i: i}, 1 + protowire.SizeVarint(uint64(i)), nil
			}
		}
		f, err := parseFloat(num)
		if err != nil {
			return value{}, 0, err
		}
		return value{kind: model.ValDouble, f: f}, 9, nil
	}
	return value{}, 0, s.errorf("invalid value")
}

// consoleInt is strconv.ParseInt(string(num), 10, 64) for a number the
// scanner has read (JSON's grammar), without the string: up to 18 digits
// cannot overflow, longer ones go to strconv.
func consoleInt(num []byte) (int64, error) {
	d := num
	neg := len(d) > 0 && d[0] == '-'
	if neg {
		d = d[1:]
	}
	if len(d) == 0 || len(d) > 18 {
		return strconv.ParseInt(string(num), 10, 64)
	}
	var n int64
	for _, c := range d {
		if c < '0' || c > '9' {
			return strconv.ParseInt(string(num), 10, 64)
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, nil
}

func parseFloat(num []byte) (float64, error) {
	switch string(num) {
	case "NaN":
		return math.NaN(), nil
	case "Infinity":
		return math.Inf(1), nil
	case "-Infinity":
		return math.Inf(-1), nil
	}
	f, err := strconv.ParseFloat(string(num), 64)
	if err != nil {
		return 0, fmt.Errorf("bad number %q", num)
	}
	return f, nil
}

// render appends the compact JSON text of the array or object at the cursor
// and returns the encoded size of its ArrayValue or KeyValueList.
func (c *consoleDecoder) render(dst []byte, depth int) ([]byte, int, error) {
	if depth >= maxDepth {
		return dst, 0, errTooDeep
	}
	s := &c.s
	size := 0
	if s.b[s.i] == '[' {
		dst = append(dst, '[')
		err := s.array(func(i int) error {
			if i > 0 {
				dst = append(dst, ',')
			}
			var n int
			var err error
			dst, n, err = c.renderElem(dst, depth)
			size += tagged(1, n)
			return err
		})
		return append(dst, ']'), size, err
	}
	dst = append(dst, '{')
	first := true
	err := s.object(func(key []byte) error {
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = appendJSONString(dst, key)
		dst = append(dst, ':')
		klen := len(key)
		var n int
		var err error
		dst, n, err = c.renderElem(dst, depth)
		size += tagged(1, tagged(1, klen)+tagged(2, n))
		return err
	})
	return append(dst, '}'), size, err
}

// renderElem appends one element of an array or object and returns its
// encoded AnyValue size.
func (c *consoleDecoder) renderElem(dst []byte, depth int) ([]byte, int, error) {
	s := &c.s
	s.ws()
	if s.i >= len(s.b) {
		return dst, 0, errTruncatedLine
	}
	switch ch := s.b[s.i]; {
	case ch == '[' || ch == '{':
		var n int
		var err error
		dst, n, err = c.render(dst, depth+1)
		if ch == '[' {
			return dst, tagged(5, n), err
		}
		return dst, tagged(6, n), err
	case ch == '"':
		v, err := c.str()
		return appendJSONString(dst, v), tagged(1, len(v)), err
	case s.lit("true"):
		return append(dst, "true"...), 2, nil
	case s.lit("false"):
		return append(dst, "false"...), 2, nil
	case s.lit("null"):
		return append(dst, "null"...), 0, nil
	}
	num, isFloat, err := s.number()
	if err != nil {
		return dst, 0, err
	}
	if !isFloat {
		if i, err := consoleInt(num); err == nil {
			return strconv.AppendInt(dst, i, 10), 1 + protowire.SizeVarint(uint64(i)), nil
		}
	}
	f, err := parseFloat(num)
	if err != nil {
		return dst, 0, err
	}
	return appendFloat(dst, f), 9, nil
}

func (c *consoleDecoder) event(sp *model.Span) (model.Event, int, error) {
	var ev model.Event
	d := c.decoder
	d.sub.Reset()
	size := 0
	err := c.s.object(func(key []byte) error {
		switch string(key) {
		case "name":
			v, err := c.str()
			if err != nil {
				return err
			}
			ev.Name = d.l.Intern(v)
			if string(v) == exceptionEvent {
				sp.SetFlags(model.FlagException)
			}
			size += tagged(2, len(v))
		case "timestamp":
			if c.s.null() {
				return nil
			}
			v, err := c.str()
			if err != nil {
				return err
			}
			if ev.Time, err = parseISO(v); err != nil {
				return err
			}
			size += 9
		case "attributes":
			n, err := c.attributes(&d.sub, sp, false)
			if err != nil {
				return err
			}
			size += n
		default:
			return c.s.skip()
		}
		return nil
	})
	ev.Attrs = d.sub.Attrs()
	return ev, size, err
}

func (c *consoleDecoder) link(sp *model.Span) (model.Link, int, error) {
	var ln model.Link
	d := c.decoder
	d.sub.Reset()
	size := 6 // flags, as the OTLP exporter sends them
	err := c.s.object(func(key []byte) error {
		switch string(key) {
		case "context":
			var err error
			ln.TraceID, ln.SpanID, err = c.context()
			size += tagged(1, 16) + tagged(2, 8)
			return err
		case "attributes":
			n, err := c.attributes(&d.sub, sp, false)
			size += n
			return err
		}
		return c.s.skip()
	})
	ln.Attrs = d.sub.Attrs()
	return ln, size, err
}

// resource reads {"attributes": {...}, "schema_url": ""}; every line of one
// process repeats it, so it is cached by its raw text.
func (c *consoleDecoder) resource() (model.ResourceID, error) {
	s := &c.s
	s.ws()
	start := s.i
	// A valid JSON value ends where its text ends: the same bytes as a
	// resource read before are that resource, with nothing to scan.
	for k := range c.recent {
		if r := &c.recent[k]; len(r.raw) > 0 && bytes.HasPrefix(s.b[start:], r.raw) {
			s.i += len(r.raw)
			return r.id, nil
		}
	}
	repaired := s.repaired
	if err := s.skip(); err != nil {
		return 0, at("resource", err)
	}
	raw := s.b[start:s.i]
	d := c.decoder
	id, ok := d.res[string(raw)]
	if !ok {
		var err error
		if id, err = c.parseResource(raw); err != nil {
			return 0, err
		}
	}
	// Text that needed UTF-8 repair counts a repair each time it is read:
	// only clean text is matched without a scan.
	if s.repaired == repaired {
		r := &c.recent[c.recentNext]
		r.raw, r.id = append(r.raw[:0], raw...), id
		c.recentNext = (c.recentNext + 1) % len(c.recent)
	}
	return id, nil
}

// parseResource parses a resource's text and interns it.
func (c *consoleDecoder) parseResource(raw []byte) (model.ResourceID, error) {
	d := c.decoder
	// Parse the resource from its own text with a nested scanner.
	outer := c.s
	c.s = scan{}
	c.s.reset(raw)
	defer func() { n := c.s.repaired; c.s = outer; c.s.repaired += n }()
	if c.s.null() {
		return 0, nil
	}
	var service []byte
	var ab model.AttrBuilder
	err := c.s.object(func(key []byte) error {
		if string(key) != "attributes" {
			return c.s.skip()
		}
		return c.s.object(func(key []byte) error {
			k := d.l.Intern(key)
			v, _, err := c.value(0)
			if err != nil {
				return at(strconv.Quote(string(key)), err)
			}
			if k == d.svcKey && v.kind == model.ValString {
				service = append(service[:0], v.s...)
			}
			d.addAttr(&ab, k, v)
			return nil
		})
	})
	if err != nil {
		return 0, at("resource", err)
	}
	id := d.l.Interner().InternResource(ab.Sorted(d.l.Interner()), d.l.Intern(service))
	d.res[string(raw)] = id
	return id, nil
}

// parseISO reads an ISO 8601 time as the Python SDK prints it
// ("2026-11-29T18:55:26.369990Z") quickly, and any RFC 3339 time otherwise.
func parseISO(v []byte) (int64, error) {
	if len(v) >= 20 && v[4] == '-' && v[7] == '-' && v[10] == 'T' && v[13] == ':' && v[16] == ':' && v[len(v)-1] == 'Z' {
		ok := true
		num := func(b []byte) int {
			n := 0
			for _, c := range b {
				if c < '0' || c > '9' {
					ok = false
					return 0
				}
				n = n*10 + int(c-'0')
			}
			return n
		}
		y, mo, d := num(v[0:4]), num(v[5:7]), num(v[8:10])
		h, mi, s := num(v[11:13]), num(v[14:16]), num(v[17:19])
		ns := 0
		frac := v[19 : len(v)-1]
		if len(frac) > 0 {
			if frac[0] != '.' || len(frac) < 2 || len(frac) > 10 {
				ok = false
			} else {
				ns = num(frac[1:])
				for i := len(frac) - 1; i < 9; i++ {
					ns *= 10
				}
			}
		}
		// int64 nanoseconds span the years 1678 to 2261.
		if ok && y > 1677 && y < 2262 && mo >= 1 && mo <= 12 && d >= 1 && d <= 31 && h < 24 && mi < 60 && s < 61 {
			return (daysFromCivil(y, mo, d)*86400+int64(h*3600+mi*60+s))*1e9 + int64(ns), nil
		}
	}
	t, err := time.Parse(time.RFC3339Nano, string(v))
	if err == nil && (t.Year() < 1678 || t.Year() > 2261) {
		err = errors.New("out of range")
	}
	if err != nil {
		return 0, fmt.Errorf("bad time %q: want ISO 8601 like 2026-11-29T18:55:26.369990Z", v)
	}
	return t.UnixNano(), nil
}

// daysFromCivil returns days since 1970-01-01 of a proleptic Gregorian date.
func daysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era--
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era)*146097 + int64(doe) - 719468
}

// errTruncatedLine marks a line that ends inside a JSON value.
var errTruncatedLine = errors.New("line ends inside a JSON value")

// scan is the console reader's view of the one JSON scanner (jsonscan.go):
// the same lexer, depth bound, number grammar and UTF-8 repair as every
// other JSON input, with the callbacks and line-oriented errors the console
// decoder wants, plus the NaN and Infinity literals Python's json module
// prints.
type scan struct {
	jsonScanner
	tmp []byte // a string unescaped or repaired, before it joins the line's scratch
}

// setLine starts scanning b, keeping the repair count.
func (s *scan) setLine(b []byte) {
	n := s.repaired
	s.reset(b)
	s.repaired = n
}

func (s *scan) errorf(format string, args ...any) error {
	if s.i >= len(s.b) {
		return errTruncatedLine
	}
	return fmt.Errorf("column %d: %s", s.i+1, fmt.Sprintf(format, args...))
}

// lineErr turns a scanner error into the console reader's: the end of the
// line inside a value is errTruncatedLine, others carry their column.
func (s *scan) lineErr(err error) error {
	if err == nil {
		return nil
	}
	var le *locError
	if !errors.As(err, &le) {
		return err
	}
	if le.off >= len(s.b) || errors.Is(le.err, errJSONEOF) {
		return errTruncatedLine
	}
	return fmt.Errorf("column %d: %w", le.off+1, le.err)
}

// lit consumes w if it is next.
func (s *scan) lit(w string) bool {
	if len(s.b)-s.i >= len(w) && string(s.b[s.i:s.i+len(w)]) == w {
		s.i += len(w)
		return true
	}
	return false
}

// null consumes a null literal if one is next.
func (s *scan) null() bool {
	s.ws()
	return s.lit("null")
}

// object reads {"key": value, ...}, calling fn with the cursor on each value;
// fn must consume the value.
func (s *scan) object(fn func(key []byte) error) error {
	s.ws()
	if s.i >= len(s.b) {
		return errTruncatedLine
	}
	if s.b[s.i] != '{' {
		return s.errorf("want an object")
	}
	if err := s.enter(); err != nil {
		return s.lineErr(err)
	}
	defer func() { s.depth-- }()
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return nil
	}
	var keyBuf []byte
	for {
		s.ws()
		k, kb, err := s.str(keyBuf[:0])
		if err != nil {
			return err
		}
		keyBuf = kb
		s.ws()
		if s.i >= len(s.b) {
			return errTruncatedLine
		}
		if s.b[s.i] != ':' {
			return s.errorf("want ':' after key")
		}
		s.i++
		s.ws()
		if err := fn(k); err != nil {
			return err
		}
		s.ws()
		if s.i >= len(s.b) {
			return errTruncatedLine
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return s.errorf("want ',' or '}'")
		}
	}
}

// array reads [value, ...], calling fn with the cursor on each element.
func (s *scan) array(fn func(i int) error) error {
	s.ws()
	if s.i >= len(s.b) {
		return errTruncatedLine
	}
	if s.b[s.i] != '[' {
		return s.errorf("want an array")
	}
	if err := s.enter(); err != nil {
		return s.lineErr(err)
	}
	defer func() { s.depth-- }()
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == ']' {
		s.i++
		return nil
	}
	for i := 0; ; i++ {
		s.ws()
		if err := fn(i); err != nil {
			return err
		}
		s.ws()
		if s.i >= len(s.b) {
			return errTruncatedLine
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case ']':
			s.i++
			return nil
		default:
			return s.errorf("want ',' or ']'")
		}
	}
}

// str reads a JSON string. Without escapes (and valid UTF-8) it returns a
// slice of the line; otherwise the unescaped or repaired text is appended
// to scr and that part returned.
func (s *scan) str(scr []byte) ([]byte, []byte, error) {
	s.ws()
	if s.i >= len(s.b) {
		return nil, scr, errTruncatedLine
	}
	if s.b[s.i] != '"' {
		return nil, scr, s.errorf("want a string")
	}
	s.tmp = s.tmp[:0]
	v, err := s.jsonScanner.str(&s.tmp)
	if err != nil {
		return nil, scr, s.lineErr(err)
	}
	if len(s.tmp) == 0 {
		return v, scr, nil // v is the line's own bytes
	}
	start := len(scr)
	scr = append(scr, v...)
	return scr[start:], scr, nil
}

// pyNumbers are the non-finite floats Python's json module prints.
var pyNumbers = []string{"NaN", "Infinity", "-Infinity"}

// number reads a number, by JSON's grammar or as Python's NaN, Infinity or
// -Infinity; isFloat reports a fraction, an exponent or one of those.
func (s *scan) number() ([]byte, bool, error) {
	start := s.i
	for _, w := range pyNumbers {
		if s.lit(w) {
			return s.b[start:s.i], true, nil
		}
	}
	if s.i >= len(s.b) {
		return nil, false, errTruncatedLine
	}
	if c := s.b[s.i]; c != '-' && (c < '0' || c > '9') {
		return nil, false, s.errorf("invalid value")
	}
	num, err := s.jsonScanner.number()
	if err != nil {
		return nil, false, s.lineErr(err)
	}
	return num, bytes.ContainsAny(num, ".eE"), nil
}

// skip consumes one value of any type, with the scanner's checks and
// depth bound; Python's non-finite numbers are taken too.
func (s *scan) skip() error {
	s.ws()
	if s.i >= len(s.b) {
		return errTruncatedLine
	}
	switch c := s.b[s.i]; {
	case c == '{':
		return s.object(func([]byte) error { return s.skip() })
	case c == '[':
		return s.array(func(int) error { return s.skip() })
	case c == '"':
		_, err := s.jsonScanner.str(&s.sscr)
		return s.lineErr(err)
	case s.lit("true"), s.lit("false"), s.lit("null"):
		return nil
	}
	_, _, err := s.number()
	return err
}
