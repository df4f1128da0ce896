package receiver

import (
	"bytes"
	"testing"

	"github.com/nemo-gym/gymtrace/model"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
)

// TestAttributeValueKinds sends every attribute value type OTLP 1.9
// requires receivers to accept (empty values, bytes, arrays of mixed
// types, kvlists, nested and empty ones) over protobuf and JSON: each is
// stored as its kind with the same text whichever the encoding, and the
// record line reopens to the same values.
func TestAttributeValueKinds(t *testing.T) {
	s := func(v string) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}
	}
	arr := func(vs ...*commonpb.AnyValue) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: vs}}}
	}
	kvl := func(kvs ...*commonpb.KeyValue) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{Values: kvs}}}
	}
	by := &commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{BytesValue: []byte{0, 1, 0xfe, 0xff}}}
	req := testRequest(1)
	sp := req.ResourceSpans[0].ScopeSpans[0].Spans[0]
	sp.Attributes = []*commonpb.KeyValue{
		kv("empty", &commonpb.AnyValue{}),
		kv("no value", nil),
		kv("empty string", s("")),
		kv("bytes", by),
		kv("empty bytes", &commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{}}),
		kv("mixed", arr(intv(1), s("a"), &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: true}}, dblv(2.5), &commonpb.AnyValue{}, by, arr(), kvl())),
		kv("kvlist", kvl(kv("a", intv(1)), kv("b", kvl(kv("c", s("d")))), kv("e", arr()), kv("f", &commonpb.AnyValue{}))),
		kv("empty array", arr()),
		kv("empty kvlist", kvl()),
	}
	want := []struct {
		key  string
		kind model.ValueKind
		text string
	}{
		{"empty", model.ValEmpty, ""},
		{"no value", model.ValEmpty, ""},
		{"empty string", model.ValString, ""},
		{"bytes", model.ValBytes, "AAH+/w=="},
		{"empty bytes", model.ValBytes, ""},
		{"mixed", model.ValArray, `[1,"a",true,2.5,null,"AAH+/w==",[],{}]`},
		{"kvlist", model.ValMap, `{"a":1,"b":{"c":"d"},"e":[],"f":null}`},
		{"empty array", model.ValArray, "[]"},
		{"empty kvlist", model.ValMap, "{}"},
	}
	check := func(t *testing.T, in *model.Interner, b model.Batch) {
		t.Helper()
		if len(b.Spans) != 1 {
			t.Fatalf("%d spans", len(b.Spans))
		}
		i := 0
		b.Spans[0].Attrs.Each(in, func(k string, v model.Value) bool {
			if i >= len(want) {
				t.Errorf("extra attribute %q", k)
				return false
			}
			w := want[i]
			if k != w.key || v.Kind != w.kind || v.String() != w.text {
				t.Errorf("attribute %d = %q kind %d %q, want %q kind %d %q", i, k, v.Kind, v.String(), w.key, w.kind, w.text)
			}
			i++
			return true
		})
		if i != len(want) {
			t.Errorf("%d attributes stored, want %d", i, len(want))
		}
	}
	for _, asJSON := range []bool{false, true} {
		name := "protobuf"
		if asJSON {
			name = "json"
		}
		t.Run(name, func(t *testing.T) {
			in, l := newLocal()
			body, f := marshal(t, req), formatProto
			if asJSON {
				body, f = otlpJSON(t, req), formatJSON
			}
			var b model.Batch
			var err error
			if asJSON {
				b, _, err = DecodeJSON(l, body, Limits{})
			} else {
				b, _, err = DecodeProto(l, body, Limits{})
			}
			if err != nil {
				t.Fatal(err)
			}
			check(t, in, b)
			lines, err := appendRecordLines(nil, recordItem{body: body, format: f})
			if err != nil {
				t.Fatal(err)
			}
			in2, l2 := newLocal()
			b2, _, err := DecodeJSON(l2, bytes.TrimSuffix(lines, []byte("\n")), Limits{})
			if err != nil {
				t.Fatalf("record line: %v", err)
			}
			check(t, in2, b2)
		})
	}
}
