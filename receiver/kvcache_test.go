package receiver

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/nemo-gym/gymtrace/model"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// A decode that meets attributes it has packed before must give what a cold
// decode gives: the same values, flags and report, under the limits of the
// call, not of the call that filled the cache.
func TestDecodeProtoAttrCacheWarm(t *testing.T) {
	b := marshal(t, sampleRequest())
	in, l := newLocal()
	cold, crep, err := DecodeProto(l, b, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	want := dumpSpans(in, cold, dumpOpts{times: true, wireSize: true})
	for i := range 3 {
		warm, wrep, err := DecodeProto(l, b, Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if got := dumpSpans(in, warm, dumpOpts{times: true, wireSize: true}); got != want {
			t.Fatalf("decode %d differs from the cold one:\n%s\nwant:\n%s", i+2, got, want)
		}
		if wrep != crep {
			t.Errorf("decode %d report = %+v, want %+v", i+2, wrep, crep)
		}
		if warm.Spans[0].Flags()&model.FlagTruncated == 0 {
			t.Errorf("decode %d lost the truncation mark", i+2)
		}
	}
}

func TestDecodeProtoAttrCacheLimits(t *testing.T) {
	var attrs []*commonpb.KeyValue
	for i := range 10 {
		attrs = append(attrs, kv(fmt.Sprintf("k%d", i), str(strings.Repeat("é", 10))))
	}
	attrs = append(attrs, kv("bad", str("a#-#b")))
	req := &coltrace.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{
			TraceId: id(16, 1), SpanId: id(8, 2), Name: "s", Attributes: attrs,
		}}}},
	}}}
	// proto.Marshal refuses invalid UTF-8, so the bad byte goes in after.
	b := bytes.Replace(marshal(t, req), []byte("a#-#b"), []byte("a#\xff#b"), 1)
	in, l := newLocal()
	steps := []struct {
		lim                      Limits
		keep, truncated, dropped int
		k0Len                    int
	}{
		{Limits{}, 11, 0, 0, 20},
		{Limits{}, 11, 0, 0, 20},
		{Limits{MaxValueLen: 7}, 11, 10, 0, 6}, // cut now, though cached uncut
		{Limits{MaxValueLen: 7}, 11, 10, 0, 6}, // and counted again
		{Limits{}, 11, 0, 0, 20},
		{Limits{MaxAttrs: 4}, 4, 0, 7, 20},
	}
	for i, s := range steps {
		bt, rep, err := DecodeProto(l, b, s.lim)
		if err != nil {
			t.Fatal(err)
		}
		sp := bt.Spans[0]
		if n := sp.Attrs.Len(in); n != s.keep {
			t.Errorf("step %d: kept %d attrs, want %d", i, n, s.keep)
		}
		if rep.ValuesTruncated != s.truncated || rep.AttrsDropped != s.dropped {
			t.Errorf("step %d: report %+v, want %d truncated, %d dropped", i, rep, s.truncated, s.dropped)
		}
		if s.keep > 10 && rep.ValuesRepaired != 1 {
			t.Errorf("step %d: %d values repaired, want 1 (a repaired value is never served from the cache)", i, rep.ValuesRepaired)
		}
		if v, _ := sp.Attrs.Get(in, "k0"); len(v.Str) != s.k0Len {
			t.Errorf("step %d: k0 has %d bytes, want %d", i, len(v.Str), s.k0Len)
		}
	}
}

// More distinct attributes than the cache has slots, repeated in another
// order: every span must still read back exactly what was sent.
func TestDecodeProtoAttrCacheChurn(t *testing.T) {
	var spans []*tracepb.Span
	for i := range 300 {
		var attrs []*commonpb.KeyValue
		for j := range 8 {
			n := (i*7 + j*131) % 3000
			attrs = append(attrs, kv(fmt.Sprintf("key.%d", j), str(fmt.Sprintf("value-%d", n))), kv("port", intv(int64(n))))
		}
		spans = append(spans, &tracepb.Span{TraceId: id(16, 1), SpanId: []byte{0, 0, 0, 0, 0, 0, byte(i >> 8), byte(i) | 1}, Name: "s", Attributes: attrs})
	}
	req := &coltrace.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{ScopeSpans: []*tracepb.ScopeSpans{{Spans: spans}}}}}
	b := marshal(t, req)
	in, l := newLocal()
	for round := range 2 {
		bt, _, err := DecodeProto(l, b, Limits{})
		if err != nil {
			t.Fatal(err)
		}
		for i, sp := range bt.Spans {
			var want []string
			for _, a := range spans[i].Attributes {
				switch v := a.Value.Value.(type) {
				case *commonpb.AnyValue_StringValue:
					want = append(want, a.Key+"="+v.StringValue)
				case *commonpb.AnyValue_IntValue:
					want = append(want, fmt.Sprintf("%s=%d", a.Key, v.IntValue))
				}
			}
			var got []string
			sp.Attrs.Each(in, func(k string, v model.Value) bool {
				got = append(got, k+"="+v.String())
				return true
			})
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Fatalf("round %d span %d: attrs %v, want %v", round, i, got, want)
			}
		}
	}
}
