package receiver

import (
	"strings"
	"testing"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// The JSON decoder reads Span and AnyValue objects field by field, each
// in its own case (see BENCHMARKS.md for why not by a table): these tests
// hold it to every field of the OTLP messages it is built against, in both
// spellings, so a field a newer OTLP adds fails here until it has a case.

// jsonSample is a value of the field's type that the decoder accepts.
func jsonSample(fd protoreflect.FieldDescriptor) string {
	switch {
	case fd.IsList():
		return `[]`
	case fd.Kind() == protoreflect.MessageKind:
		return `{}`
	case fd.Kind() == protoreflect.StringKind || fd.Kind() == protoreflect.BytesKind:
		return `""`
	case fd.Kind() == protoreflect.BoolKind:
		return `true`
	}
	return `0`
}

// Each field of Span given twice is refused, by its name: the decoder
// knows it (an unknown key is skipped, never refused).
func TestDecodeJSONKnowsEverySpanField(t *testing.T) {
	fields := (&tracepb.Span{}).ProtoReflect().Descriptor().Fields()
	if fields.Len() < 16 {
		t.Fatalf("Span has %d fields, want at least 16", fields.Len())
	}
	for i := range fields.Len() {
		fd := fields.Get(i)
		for _, key := range []string{fd.JSONName(), string(fd.Name())} {
			v := jsonSample(fd)
			in := `{"resourceSpans":[{"scopeSpans":[{"spans":[{"` + key + `":` + v + `,"` + key + `":` + v + `}]}]}]}`
			_, l := newLocal()
			_, _, err := DecodeJSON(l, []byte(in), Limits{})
			if err == nil || !strings.Contains(err.Error(), errDupField.Error()) || !strings.Contains(err.Error(), fd.JSONName()) {
				t.Errorf("DecodeJSON(%s) = %v, want %q refused as given twice", in, err, fd.JSONName())
			}
		}
	}
}

// anyValueLeftOut are the AnyValue alternatives both decoders skip, as
// an unknown field: string_value_strindex indexes the string table of a
// profiles request's dictionary, which a trace request has not.
var anyValueLeftOut = map[protoreflect.Name]bool{"string_value_strindex": true}

// Each alternative of AnyValue is read: two in one value are refused, by
// the first one's name.
func TestDecodeJSONKnowsEveryAnyValue(t *testing.T) {
	oneof := (&commonpb.AnyValue{}).ProtoReflect().Descriptor().Oneofs().ByName("value").Fields()
	if oneof.Len() < 7 {
		t.Fatalf("AnyValue has %d alternatives, want at least 7", oneof.Len())
	}
	for i := range oneof.Len() {
		fd := oneof.Get(i)
		if anyValueLeftOut[fd.Name()] {
			continue
		}
		other := `"stringValue":"x"`
		if fd.Name() == "string_value" {
			other = `"intValue":"1"`
		}
		for _, key := range []string{fd.JSONName(), string(fd.Name())} {
			in := `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"1112131415161718",` +
				`"attributes":[{"key":"k","value":{"` + key + `":` + jsonSample(fd) + `,` + other + `}}]}]}]}]}`
			_, l := newLocal()
			_, _, err := DecodeJSON(l, []byte(in), Limits{})
			if err == nil || !strings.Contains(err.Error(), fd.JSONName()+" is already set") {
				t.Errorf("DecodeJSON(%s) = %v, want a second value after %q refused", in, err, fd.JSONName())
			}
		}
	}
}
