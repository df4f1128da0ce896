package receiver

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"

	collogs "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// appendSignalLine renders a protobuf metrics or logs request as one
// OTLP/JSON line. They are few next to spans, so protojson does the work;
// only its base64 ids (exemplars, log records) are turned into the hex
// OTLP/JSON requires.
func appendSignalLine(dst []byte, it recordItem) ([]byte, error) {
	var m proto.Message = &colmetrics.ExportMetricsServiceRequest{}
	if it.sig == signalLogs {
		m = &collogs.ExportLogsServiceRequest{}
	}
	if err := proto.Unmarshal(it.body, m); err != nil {
		return dst, fmt.Errorf("record protobuf %s request: %w", it.sig, err)
	}
	raw, err := protojson.Marshal(m)
	if err != nil {
		return dst, fmt.Errorf("record %s request: %w", it.sig, err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return dst, fmt.Errorf("record %s request: %w", it.sig, err)
	}
	hexIDs(v)
	buf := bytes.NewBuffer(dst)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return dst, fmt.Errorf("record %s request: %w", it.sig, err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// hexIDs rewrites traceId and spanId members from base64 to hex in place.
func hexIDs(v any) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if s, ok := e.(string); ok && (k == "traceId" || k == "spanId") {
				if b, err := base64.StdEncoding.DecodeString(s); err == nil {
					x[k] = hex.EncodeToString(b)
				}
				continue
			}
			hexIDs(e)
		}
	case []any:
		for _, e := range x {
			hexIDs(e)
		}
	}
}

// appendTraceLines renders req as OTLP/JSON, split into several lines (by
// resource, then scope, then span halves) while a line would be longer
// than max, so every line the recorder writes reads back.
func appendTraceLines(dst []byte, req *coltrace.ExportTraceServiceRequest, max int) []byte {
	start := len(dst)
	dst = AppendTraceRequestJSON(dst, req)
	if len(dst)-start <= max {
		return dst
	}
	a, b, ok := splitTraceRequest(req)
	if !ok {
		return dst // one span over the bound: the reader reports it
	}
	dst = appendTraceLines(dst[:start], a, max)
	dst = append(dst, '\n')
	return appendTraceLines(dst, b, max)
}

// splitTraceRequest cuts req in two halves of its resources, or of its one
// resource's scopes, or of its one scope's spans.
func splitTraceRequest(req *coltrace.ExportTraceServiceRequest) (a, b *coltrace.ExportTraceServiceRequest, ok bool) {
	rss := req.GetResourceSpans()
	if len(rss) > 1 {
		h := len(rss) / 2
		return &coltrace.ExportTraceServiceRequest{ResourceSpans: rss[:h]}, &coltrace.ExportTraceServiceRequest{ResourceSpans: rss[h:]}, true
	}
	if len(rss) == 0 {
		return nil, nil, false
	}
	rs := rss[0]
	wrap := func(ss []*tracepb.ScopeSpans) *coltrace.ExportTraceServiceRequest {
		return &coltrace.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{Resource: rs.Resource, SchemaUrl: rs.SchemaUrl, ScopeSpans: ss}}}
	}
	sss := rs.GetScopeSpans()
	if len(sss) > 1 {
		h := len(sss) / 2
		return wrap(sss[:h]), wrap(sss[h:]), true
	}
	if len(sss) == 0 || len(sss[0].GetSpans()) < 2 {
		return nil, nil, false
	}
	ss := sss[0]
	h := len(ss.Spans) / 2
	part := func(spans []*tracepb.Span) *coltrace.ExportTraceServiceRequest {
		return wrap([]*tracepb.ScopeSpans{{Scope: ss.Scope, SchemaUrl: ss.SchemaUrl, Spans: spans}})
	}
	return part(ss.Spans[:h]), part(ss.Spans[h:]), true
}
