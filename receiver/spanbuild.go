package receiver

import (
	"fmt"
	"math"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/nemo-gym/gymtrace/model"
)

// The span builder every decoder shares (protobuf, OTLP/JSON, console):
// the pooled scratch state, the attribute cap and truncation mark, value
// cuts, UTF-8 repair, and the one rendering of values as text. Each
// decoder only parses its format and hands fields to it, so a span reads
// the same whichever format it came in.

// Attribute names and event names the decoders give meaning to.
const (
	truncatedKey   = "nemo.span.truncated"
	serviceNameKey = "service.name"
	// serviceOverrideKey is where gym eval submit's Collector moves a
	// server's own service.name (nemo-gym/<server>) when it writes a
	// routing name over it: the Gym process is the one it names.
	serviceOverrideKey = "service.name.override"
	exceptionEvent     = "exception"
)

// decoder holds the per-call scratch state of the decoders. Decoders are
// pooled so a busy receiver reuses the buffers and the resource cache.
type decoder struct {
	l   *model.Local
	lim Limits
	rep Report

	attrs model.AttrBuilder // the span's attributes
	sub   model.AttrBuilder // an event's, a link's or a resource's attributes
	kv    kvCache           // span attributes packed lately, by wire bytes
	text  []byte            // scratch for rendered values
	fix   []byte            // scratch for repaired names and keys
	vfix  []byte            // scratch for a repaired string value

	// res caches resource ids by the resource's raw bytes: every request from
	// one process repeats the same resource, so it is decoded once. The ids
	// belong to one Interner; the cache is cleared when it changes.
	res   map[string]model.ResourceID
	resOf *model.Interner

	// turn, when set, waits until the requests before this one are decoded
	// (see internResource).
	turn func()

	truncKey, svcKey model.Str
	keysOf           *model.Interner

	// spans are the decoded spans, traces and parents their trace and
	// parent ids (one a span).
	spans   []model.Span
	traces  []model.TraceID
	parents []model.SpanID
	// rs and ss index the resource_spans and scope_spans being decoded, to
	// name a rejected span's place.
	rs, ss int
}

var decoders = sync.Pool{New: func() any {
	return &decoder{res: make(map[string]model.ResourceID)}
}}

// getDecoder returns a pooled decoder bound to l.
func getDecoder(l *model.Local, lim Limits) *decoder {
	d := decoders.Get().(*decoder)
	d.l = l
	d.lim = lim.norm()
	d.rep = Report{}
	if t := l.Interner(); d.resOf != t {
		clear(d.res)
		d.resOf = t
	}
	d.kv.bind(l.Interner(), d.lim)
	if d.keysOf != l.Interner() {
		d.truncKey = l.Intern([]byte(truncatedKey))
		d.svcKey = l.Intern([]byte(serviceNameKey))
		d.keysOf = l.Interner()
	}
	return d
}

// internResource interns a resource. A decoder reading one of several
// requests decoded at once adds a resource the interner lacks only in its
// turn, so resources get their ids in the order a sequential read gives
// them (the order services are listed in).
func (d *decoder) internResource(attrs model.Attrs, service model.Str) model.ResourceID {
	t := d.l.Interner()
	if v, ok := attrs.Get(t, serviceOverrideKey); ok && v.Kind == model.ValString && v.Str != "" {
		service = t.Intern(v.Str)
	}
	if d.turn != nil {
		if id, ok := t.LookupResource(attrs); ok {
			return id
		}
		d.turn()
	}
	return t.InternResource(attrs, service)
}

func putDecoder(d *decoder) {
	d.l = nil
	d.turn = nil
	d.spans, d.traces, d.parents = nil, nil, nil
	if len(d.res) > 1024 {
		clear(d.res)
	}
	if cap(d.text) > 1<<20 {
		d.text = nil
	}
	decoders.Put(d)
}

// value is one decoded attribute value; s may point into the request or into
// the decoder's scratch text, so it is only valid until the next value.
type value struct {
	kind model.ValueKind
	s    []byte
	i    int64
	f    float64
	b    bool
}

// spanIDsReason says why a span's ids reject it, or returns "", for every
// decoder: tidLen, sidLen and pidLen are the ids' lengths as sent (0:
// absent; pidLen a wrong parent length, when one was sent). The trace's
// fault is named first, then the span's, the parent's, and all-zero ids.
func spanIDsReason(trace model.TraceID, span model.SpanID, tidLen, sidLen, pidLen int) string {
	if r := idLenReason("trace_id", tidLen, 16, false); r != "" {
		return r
	}
	if r := idLenReason("span_id", sidLen, 8, false); r != "" {
		return r
	}
	if r := idLenReason("parent_span_id", pidLen, 8, true); r != "" {
		return r
	}
	if trace.IsZero() {
		return "trace_id is all zeros"
	}
	if span.IsZero() {
		return "span_id is all zeros"
	}
	return ""
}

// idLenReason explains an id of the wrong length, or returns "".
func idLenReason(name string, got, want int, optional bool) string {
	if got == want || (optional && got == 0) {
		return ""
	}
	return fmt.Sprintf("%s has %d bytes, want %d", name, got, want)
}

func isTrue(v value) bool {
	switch v.kind {
	case model.ValBool:
		return v.b
	case model.ValString:
		return string(v.s) == "true"
	}
	return false
}

// keepAttr adds v under k to ab unless ab is at the attribute cap, in which
// case the attribute is counted and sp marked instead. On a span's own
// attributes (onSpan) it also marks a span force-closed at shutdown. It
// reports whether the attribute was kept.
func (d *decoder) keepAttr(ab *model.AttrBuilder, sp *model.Span, k model.Str, v value, onSpan bool) bool {
	if ab.Count() >= d.lim.MaxAttrs {
		d.rep.AttrsDropped++
		sp.SetFlags(model.FlagAttrsCapped)
		return false
	}
	if onSpan && k == d.truncKey && isTrue(v) {
		sp.SetFlags(model.FlagTruncated)
	}
	d.addAttr(ab, k, v)
	return true
}

// addAttr adds v under k to ab, cutting values longer than the limit.
func (d *decoder) addAttr(ab *model.AttrBuilder, k model.Str, v value) {
	switch v.kind {
	case model.ValBool:
		ab.Bool(k, v.b)
	case model.ValInt:
		ab.Int(k, v.i)
	case model.ValDouble:
		ab.Double(k, v.f)
	default:
		s := v.s
		if len(s) > d.lim.MaxValueLen {
			s = truncUTF8(s, d.lim.MaxValueLen)
			d.rep.ValuesTruncated++
		}
		if v.kind == model.ValString {
			ab.String(d.l, k, s)
		} else {
			ab.Text(d.l, k, v.kind, s)
		}
	}
}

// repairValue is repair for a string value, which lives until its
// attribute is kept: names and keys repaired meanwhile do not disturb it.
func (d *decoder) repairValue(b []byte) []byte {
	return repairUTF8(b, &d.vfix, &d.rep.ValuesRepaired)
}

// repair returns b, or its repair when it is not valid UTF-8 (see utf8.go),
// counted in the report. The repair lives in scratch until the next call.
func (d *decoder) repair(b []byte) []byte {
	return repairUTF8(b, &d.fix, &d.rep.ValuesRepaired)
}

// appendFloat renders a double the way the value renderers agree on.
func appendFloat(dst []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, "NaN"...)
	case math.IsInf(f, 1):
		return append(dst, "Infinity"...)
	case math.IsInf(f, -1):
		return append(dst, "-Infinity"...)
	}
	return strconv.AppendFloat(dst, f, 'g', -1, 64)
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string; invalid UTF-8 becomes U+FFFD,
// so the output is always valid JSON.
func appendJSONString[S ~string | ~[]byte](dst []byte, s S) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c == '\n':
				dst = append(dst, '\\', 'n')
			case c == '\t':
				dst = append(dst, '\\', 't')
			case c == '\r':
				dst = append(dst, '\\', 'r')
			case c < 0x20:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&15])
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		// At most UTFMax bytes are converted: no allocation for []byte.
		r, n := utf8.DecodeRuneInString(string(s[i:min(i+utf8.UTFMax, len(s))]))
		if r == utf8.RuneError && n == 1 {
			dst = append(dst, "\ufffd"...)
		} else {
			dst = append(dst, s[i:i+n]...)
		}
		i += n
	}
	return append(dst, '"')
}
