package gymsim

import (
	"context"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// ConsoleExporter writes spans as JSON lines in the format of the
// OpenTelemetry Python SDK's ReadableSpan.to_json(indent=None), which is what
// NeMo Gym's console exporter prints: key order name, context, kind,
// parent_id, start_time, end_time, status, attributes, events, links,
// resource; "0x" hex ids; "SpanKind.SERVER"; ISO times with microseconds;
// json.dumps separators and ASCII escaping. It is safe for concurrent use;
// exporters sharing one writer share its lock, so lines never interleave.
type ConsoleExporter struct {
	w        *lockedWriter
	resOrder []attribute.Key
	buf      []byte
}

// lockedWriter serialises whole lines from several exporters.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

// NewConsoleExporter returns an exporter writing to w. resOrder lists
// resource keys in the order Python would print them (insertion order); keys
// not listed follow in the SDK's order.
func NewConsoleExporter(w io.Writer, resOrder []attribute.Key) *ConsoleExporter {
	return &ConsoleExporter{w: &lockedWriter{w: w}, resOrder: resOrder}
}

func newConsoleExporterShared(w *lockedWriter, resOrder []attribute.Key) *ConsoleExporter {
	return &ConsoleExporter{w: w, resOrder: resOrder}
}

// ExportSpans writes one line per span.
func (e *ConsoleExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	e.w.mu.Lock()
	defer e.w.mu.Unlock()
	for _, s := range spans {
		e.buf = AppendPythonSpanJSON(e.buf[:0], s, e.resOrder)
		e.buf = append(e.buf, '\n')
		if _, err := e.w.w.Write(e.buf); err != nil {
			return err
		}
	}
	return nil
}

// Shutdown does nothing: the writer belongs to the caller.
func (e *ConsoleExporter) Shutdown(ctx context.Context) error { return nil }

var kindNames = map[trace.SpanKind]string{
	trace.SpanKindUnspecified: "SpanKind.INTERNAL",
	trace.SpanKindInternal:    "SpanKind.INTERNAL",
	trace.SpanKindServer:      "SpanKind.SERVER",
	trace.SpanKindClient:      "SpanKind.CLIENT",
	trace.SpanKindProducer:    "SpanKind.PRODUCER",
	trace.SpanKindConsumer:    "SpanKind.CONSUMER",
}

// AppendPythonSpanJSON appends s in the Python SDK's to_json(indent=None) form.
func AppendPythonSpanJSON(b []byte, s sdktrace.ReadOnlySpan, resOrder []attribute.Key) []byte {
	b = append(b, `{"name": `...)
	b = appendPyString(b, s.Name())
	b = append(b, `, "context": `...)
	b = appendContext(b, s.SpanContext())
	b = append(b, `, "kind": "`...)
	b = append(b, kindNames[s.SpanKind()]...)
	b = append(b, `", "parent_id": `...)
	if p := s.Parent(); p.SpanID().IsValid() {
		b = append(b, `"0x`...)
		b = append(b, p.SpanID().String()...)
		b = append(b, '"')
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `, "start_time": `...)
	b = appendPyTime(b, s.StartTime())
	b = append(b, `, "end_time": `...)
	b = appendPyTime(b, s.EndTime())
	b = append(b, `, "status": {"status_code": "`...)
	st := s.Status()
	switch st.Code {
	case codes.Error:
		b = append(b, "ERROR"...)
	case codes.Ok:
		b = append(b, "OK"...)
	default:
		b = append(b, "UNSET"...)
	}
	b = append(b, '"')
	if st.Description != "" {
		b = append(b, `, "description": `...)
		b = appendPyString(b, st.Description)
	}
	b = append(b, `}, "attributes": `...)
	b = appendPyAttrs(b, s.Attributes())
	b = append(b, `, "events": [`...)
	for i, ev := range s.Events() {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, `{"name": `...)
		b = appendPyString(b, ev.Name)
		b = append(b, `, "timestamp": `...)
		b = appendPyTime(b, ev.Time)
		b = append(b, `, "attributes": `...)
		b = appendPyAttrs(b, ev.Attributes)
		b = append(b, '}')
	}
	b = append(b, `], "links": [`...)
	for i, l := range s.Links() {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, `{"context": `...)
		b = appendContext(b, l.SpanContext)
		b = append(b, `, "attributes": `...)
		b = appendPyAttrs(b, l.Attributes)
		b = append(b, '}')
	}
	b = append(b, `], "resource": {"attributes": `...)
	var res []attribute.KeyValue
	schema := ""
	if r := s.Resource(); r != nil {
		res = orderAttrs(r.Attributes(), resOrder)
		schema = r.SchemaURL()
	}
	b = appendPyAttrs(b, res)
	b = append(b, `, "schema_url": `...)
	b = appendPyString(b, schema)
	b = append(b, "}}"...)
	return b
}

// orderAttrs puts the keys of order first, in that order, then the rest.
func orderAttrs(kvs []attribute.KeyValue, order []attribute.Key) []attribute.KeyValue {
	if len(order) == 0 {
		return kvs
	}
	out := make([]attribute.KeyValue, 0, len(kvs))
	used := make([]bool, len(kvs))
	for _, k := range order {
		for i, kv := range kvs {
			if !used[i] && kv.Key == k {
				out = append(out, kv)
				used[i] = true
				break
			}
		}
	}
	for i, kv := range kvs {
		if !used[i] {
			out = append(out, kv)
		}
	}
	return out
}

func appendContext(b []byte, sc trace.SpanContext) []byte {
	b = append(b, `{"trace_id": "0x`...)
	b = append(b, sc.TraceID().String()...)
	b = append(b, `", "span_id": "0x`...)
	b = append(b, sc.SpanID().String()...)
	// Python prints repr(TraceState()), which is "[]" when empty.
	b = append(b, `", "trace_state": `...)
	ts := "[]"
	if sc.TraceState().Len() > 0 {
		var parts []string
		sc.TraceState().Walk(func(k, v string) bool {
			parts = append(parts, "('"+k+"', '"+v+"')")
			return true
		})
		ts = "[" + strings.Join(parts, ", ") + "]"
	}
	b = appendPyString(b, ts)
	return append(b, '}')
}

// appendPyTime writes the time as Python's ns_to_iso_str does:
// %Y-%m-%dT%H:%M:%S.%fZ in UTC, microseconds.
func appendPyTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.UTC().Truncate(time.Microsecond).AppendFormat(b, "2006-01-02T15:04:05.000000Z")
	return append(b, '"')
}

func appendPyAttrs(b []byte, kvs []attribute.KeyValue) []byte {
	b = append(b, '{')
	for i, kv := range kvs {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = appendPyString(b, string(kv.Key))
		b = append(b, ": "...)
		b = appendPyValue(b, kv.Value)
	}
	return append(b, '}')
}

func appendPyValue(b []byte, v attribute.Value) []byte {
	switch v.Type() {
	case attribute.BOOL:
		return strconv.AppendBool(b, v.AsBool())
	case attribute.INT64:
		return strconv.AppendInt(b, v.AsInt64(), 10)
	case attribute.FLOAT64:
		return appendPyFloat(b, v.AsFloat64())
	case attribute.STRING:
		return appendPyString(b, v.AsString())
	case attribute.BOOLSLICE:
		return appendList(b, v.AsBoolSlice(), func(b []byte, x bool) []byte { return strconv.AppendBool(b, x) })
	case attribute.INT64SLICE:
		return appendList(b, v.AsInt64Slice(), func(b []byte, x int64) []byte { return strconv.AppendInt(b, x, 10) })
	case attribute.FLOAT64SLICE:
		return appendList(b, v.AsFloat64Slice(), appendPyFloat)
	case attribute.STRINGSLICE:
		return appendList(b, v.AsStringSlice(), appendPyString)
	}
	return appendPyString(b, v.Emit())
}

func appendList[T any](b []byte, xs []T, f func([]byte, T) []byte) []byte {
	b = append(b, '[')
	for i, x := range xs {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = f(b, x)
	}
	return append(b, ']')
}

// appendPyFloat writes f as Python's float repr does inside json.dumps:
// shortest round-trip digits, always with a fraction or exponent, exponent
// form outside [1e-4, 1e16), and NaN/Infinity literals.
func appendPyFloat(b []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, "NaN"...)
	case math.IsInf(f, 1):
		return append(b, "Infinity"...)
	case math.IsInf(f, -1):
		return append(b, "-Infinity"...)
	}
	a := math.Abs(f)
	if a != 0 && (a < 1e-4 || a >= 1e16) {
		s := strconv.FormatFloat(f, 'e', -1, 64)
		// Go writes 1e-05 and 1e+16 exactly as Python does.
		return append(b, s...)
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	b = append(b, s...)
	if !strings.ContainsAny(s, ".") {
		b = append(b, ".0"...)
	}
	return b
}

// appendPyString writes s as json.dumps does with ensure_ascii=True: every
// character outside printable ASCII is escaped, astral ones as surrogate pairs.
func appendPyString(b []byte, s string) []byte {
	const hexd = "0123456789abcdef"
	u4 := func(b []byte, r rune) []byte {
		return append(b, '\\', 'u', hexd[r>>12&0xf], hexd[r>>8&0xf], hexd[r>>4&0xf], hexd[r&0xf])
	}
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			i++
			switch c {
			case '"':
				b = append(b, '\\', '"')
			case '\\':
				b = append(b, '\\', '\\')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				if c < 0x20 || c == 0x7f {
					b = u4(b, rune(c))
				} else {
					b = append(b, c)
				}
			}
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		if r > 0xffff {
			r1, r2 := utf16.EncodeRune(r)
			b = u4(u4(b, r1), r2)
		} else {
			b = u4(b, r)
		}
	}
	return append(b, '"')
}
