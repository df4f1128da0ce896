package receiver

import (
	"errors"

	"google.golang.org/protobuf/encoding/protowire"
)

// errMalformed is wire data the generated types would not parse.
var errMalformed = errors.New("malformed message: a nested field is not valid protobuf")

// wireShape is a wireMsg's message fields as an array, for wireOK's hot
// loop (a map lookup per field cost a quarter of the decode).
type wireShape struct {
	msgs [16]*wireShape
}

var traceRequestShape = shapeOf(traceRequestSchema, map[*wireMsg]*wireShape{})

func shapeOf(m *wireMsg, seen map[*wireMsg]*wireShape) *wireShape {
	if s := seen[m]; s != nil {
		return s
	}
	s := &wireShape{}
	seen[m] = s
	for num, sub := range m.msgs {
		if num < protowire.Number(len(s.msgs)) {
			s.msgs[num] = shapeOf(sub, seen)
		}
	}
	return s
}

// checkRecordable refuses a protobuf request the decoder accepted but the
// record could not hold. It costs about half a decode, so the server runs
// it only when recording: the store keeps only what the decoder read.
func checkRecordable(body []byte, f wireFormat) error {
	if f == formatProto && !wireOK(body, traceRequestShape, 0) {
		return errMalformed
	}
	return nil
}

// wireOK reports whether b parses as message m, its known message fields
// recursively, as the generated types parse it (strings are not checked:
// bad UTF-8 is repaired, not refused). The decoder runs it on requests it
// accepted: parts it does not read (a scope, a second value of a oneof, an
// entity ref) the record keeps, so they must parse too.
func wireOK(b []byte, m *wireShape, depth int) bool {
	if depth > 128 { // values nest 32 deep, two messages a level
		return false
	}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return false
		}
		if typ == protowire.BytesType && num < protowire.Number(len(m.msgs)) && m.msgs[num] != nil {
			v, k := protowire.ConsumeBytes(b[n:])
			if k < 0 || !wireOK(v, m.msgs[num], depth+1) {
				return false
			}
			b = b[n+k:]
			continue
		}
		k := protowire.ConsumeFieldValue(num, typ, b[n:])
		if k < 0 {
			return false
		}
		b = b[n+k:]
	}
	return true
}
