package receiver

import (
	"bytes"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
)

// Strings that are not valid UTF-8 are kept, each invalid sequence replaced
// by U+FFFD and counted (Report.ValuesRepaired), as the Collector keeps
// them: one bad byte from a model's output must not cost a whole batch.
// Every decoder repairs the same way, so a string compares equal whichever
// format it came in, and what is stored, shown and recorded is valid.

// repairUTF8 returns v when it is valid UTF-8, else a repaired copy made in
// *scr, counting the repair in *n.
func repairUTF8(v []byte, scr *[]byte, n *int) []byte {
	if utf8.Valid(v) {
		return v
	}
	*n++
	*scr = appendRepaired((*scr)[:0], v)
	return *scr
}

// appendRepaired appends v with one U+FFFD for each run of bytes that are
// not UTF-8, as bytes.ToValidUTF8 does.
func appendRepaired(dst, v []byte) []byte {
	for len(v) > 0 {
		r, size := utf8.DecodeRune(v)
		if r == utf8.RuneError && size == 1 {
			for len(v) > 0 {
				if r, size = utf8.DecodeRune(v); r != utf8.RuneError || size != 1 {
					break
				}
				v = v[1:]
			}
			dst = append(dst, "\uFFFD"...)
			continue
		}
		dst = append(dst, v[:size]...)
		v = v[size:]
	}
	return dst
}

// validJSONBody makes a JSON document valid UTF-8 for the record: outside
// strings valid JSON is ASCII, so repairing the whole text repairs exactly
// its strings.
func validJSONBody(b []byte) []byte {
	if utf8.Valid(b) {
		return b
	}
	return bytes.ToValidUTF8(b, []byte("\uFFFD"))
}

// wireMsg is the part of an OTLP message's schema the repair needs: which
// fields are strings, which are messages (and of what kind).
type wireMsg struct {
	strs map[protowire.Number]bool
	msgs map[protowire.Number]*wireMsg
}

// traceRequestSchema is ExportTraceServiceRequest's strings and messages.
var traceRequestSchema = func() *wireMsg {
	m := func(strs ...protowire.Number) *wireMsg {
		w := &wireMsg{strs: map[protowire.Number]bool{}, msgs: map[protowire.Number]*wireMsg{}}
		for _, n := range strs {
			w.strs[n] = true
		}
		return w
	}
	anyValue, kv, array, kvlist := m(1), m(1), m(), m()
	kv.msgs[2] = anyValue
	anyValue.msgs[5], anyValue.msgs[6] = array, kvlist
	array.msgs[1], kvlist.msgs[1] = anyValue, kv
	resource := m()
	resource.msgs[1], resource.msgs[3] = kv, m(1, 2, 3, 4) // attributes, entity_refs
	scope := m(1, 2)
	scope.msgs[3] = kv
	event, link, status := m(2), m(3), m(2)
	event.msgs[3], link.msgs[4] = kv, kv
	span := m(3, 5)
	span.msgs[9], span.msgs[11], span.msgs[13], span.msgs[15] = kv, event, link, status
	scopeSpans := m(3)
	scopeSpans.msgs[1], scopeSpans.msgs[2] = scope, span
	resourceSpans := m(3)
	resourceSpans.msgs[1], resourceSpans.msgs[2] = resource, scopeSpans
	req := m()
	req.msgs[1] = resourceSpans
	return req
}()

// repairProtoStrings rewrites a protobuf trace request with every string
// made valid UTF-8, so the record (written through the generated types,
// which refuse invalid strings) holds the request as the store does. It
// runs only on requests the decoder already read and repaired.
func repairProtoStrings(b []byte) []byte {
	out, ok := repairWire(nil, b, traceRequestSchema, 0)
	if !ok {
		return b
	}
	return out
}

func repairWire(dst, b []byte, m *wireMsg, depth int) ([]byte, bool) {
	if depth > 128 { // as wireOK: values nest 32 deep, two messages a level
		return dst, false
	}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return dst, false
		}
		k := protowire.ConsumeFieldValue(num, typ, b[n:])
		if k < 0 {
			return dst, false
		}
		if typ == protowire.BytesType && (m.strs[num] || m.msgs[num] != nil) {
			v, _ := protowire.ConsumeBytes(b[n:])
			dst = protowire.AppendTag(dst, num, typ)
			if m.strs[num] {
				dst = protowire.AppendBytes(dst, bytes.ToValidUTF8(v, []byte("\uFFFD")))
			} else {
				sub, ok := repairWire(nil, v, m.msgs[num], depth+1)
				if !ok {
					return dst, false
				}
				dst = protowire.AppendBytes(dst, sub)
			}
		} else {
			dst = append(dst, b[:n+k]...)
		}
		b = b[n+k:]
	}
	return dst, true
}
