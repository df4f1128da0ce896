package receiver

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nemo-gym/gymtrace/model"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// httpClient is the tests' own client, so its idle connections can be
// closed before goroutines are counted.
var httpClient = &http.Client{Transport: &http.Transport{}, Timeout: 30 * time.Second}

// testRequest builds a request with n spans of one trace under one root.
func testRequest(n int) *coltrace.ExportTraceServiceRequest {
	spans := make([]*tracepb.Span, n)
	trace := bytes.Repeat([]byte{0xab}, 16)
	for i := range spans {
		id := make([]byte, 8)
		binary.BigEndian.PutUint64(id, uint64(i+1))
		sp := &tracepb.Span{
			TraceId:           trace,
			SpanId:            id,
			Name:              "op",
			Kind:              tracepb.Span_SPAN_KIND_INTERNAL,
			StartTimeUnixNano: 1_700_000_000_000_000_000 + uint64(i),
			EndTimeUnixNano:   1_700_000_000_000_001_000 + uint64(i),
			Attributes: []*commonpb.KeyValue{{Key: model.RolloutIDKey, Value: &commonpb.AnyValue{
				Value: &commonpb.AnyValue_StringValue{StringValue: "r-1"}}}},
		}
		if i > 0 {
			sp.ParentSpanId = spans[0].SpanId
		}
		spans[i] = sp
	}
	return &coltrace.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{{Key: "service.name", Value: &commonpb.AnyValue{
			Value: &commonpb.AnyValue_StringValue{StringValue: "nemo-gym/test"}}}}},
		ScopeSpans: []*tracepb.ScopeSpans{{Spans: spans}},
	}}}
}

func encodeRequest(t testing.TB, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func gzipBytes(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

// postHTTP posts body and returns the status and the response body.
func postHTTP(t testing.TB, addr, path, contentType, encoding string, body []byte) (int, []byte) {
	t.Helper()
	code, _, resp := doHTTP(t, http.MethodPost, addr, path, map[string]string{"Content-Type": contentType, "Content-Encoding": encoding}, body)
	return code, resp
}

func doHTTP(t testing.TB, method, addr, path string, headers map[string]string, body []byte) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+addr+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		if v != "" {
			req.Header.Set(k, v)
		}
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read response: %v", method, path, err)
	}
	return resp.StatusCode, resp.Header, b
}

// decodeStatus parses a google.rpc.Status error body in either format.
func decodeStatus(t *testing.T, contentType string, b []byte) *spb.Status {
	t.Helper()
	var st spb.Status
	var err error
	if contentType == mediaProto {
		err = proto.Unmarshal(b, &st)
	} else {
		err = protojson.Unmarshal(b, &st)
	}
	if err != nil {
		t.Fatalf("error body %q (%s) is not a google.rpc.Status: %v", b, contentType, err)
	}
	return &st
}

func TestHTTPInvalidRequests(t *testing.T) {
	const token = "t0ken"
	srv, st := startServer(t, Config{AuthToken: token, MaxRecvBytes: 64 << 10, MaxDecompressed: 256 << 10}, model.Options{})
	_, addr := srv.Addrs()
	good := encodeRequest(t, testRequest(3))
	goodJSON := recordJSON(t, testRequest(1))
	badIDs := []byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"zz","spanId":"0102030405060708","name":"x"}]}]}]}`)
	bomb := gzipBytes(t, make([]byte, 1<<20))             // 1 MiB of zeros in about 1 KiB
	oversized := bytes.Repeat([]byte{0x0a, 0x00}, 40<<10) // 80 KiB
	truncated := good[:len(good)-5]
	tests := []struct {
		name        string
		method      string
		path        string
		contentType string
		encoding    string
		auth        string // "-" = none
		body        []byte
		wantCode    int
		wantMsg     string // substring of the Status message
		wantHeader  [2]string
	}{
		{name: "ok protobuf", body: good, wantCode: 200},
		{name: "ok protobuf gzip", encoding: "gzip", body: gzipBytes(t, good), wantCode: 200},
		{name: "ok json", contentType: mediaJSON, body: goodJSON, wantCode: 200},
		{name: "ok json with charset", contentType: "application/json; charset=utf-8", body: goodJSON, wantCode: 200},
		{name: "wrong content type", contentType: "text/plain", body: good, wantCode: 415,
			wantMsg: `unsupported content type "text/plain": use application/x-protobuf or application/json`},
		{name: "missing content type", contentType: "-", body: good, wantCode: 415, wantMsg: `unsupported content type ""`},
		{name: "truncated protobuf", body: truncated, wantCode: 400, wantMsg: "truncated"},
		{name: "bad gzip", encoding: "gzip", body: []byte("not gzip at all"), wantCode: 400, wantMsg: "bad gzip body"},
		{name: "truncated gzip", encoding: "gzip", body: gzipBytes(t, good)[:20], wantCode: 400, wantMsg: "bad gzip body"},
		{name: "unknown encoding", encoding: "br", body: good, wantCode: 415, wantMsg: `unsupported content encoding "br": use one of deflate, gzip, lz4, snappy, x-gzip, x-snappy-framed, zlib, zstd, or none`},
		{name: "gzip bomb", encoding: "gzip", body: bomb, wantCode: 413,
			wantMsg: "decompressed body larger than the 262144-byte limit"},
		{name: "oversized body", body: oversized, wantCode: 413,
			wantMsg: "request body of 81920 bytes is larger than the 65536-byte limit"},
		{name: "invalid json", contentType: mediaJSON, body: []byte(`{"resourceSpans": [`), wantCode: 400},
		{name: "bad hex ids", contentType: mediaJSON, body: badIDs, wantCode: 400,
			wantMsg: `resourceSpans[0].scopeSpans[0].spans[0].traceId: bad hex id "zz"`},
		{name: "wrong method", method: http.MethodGet, body: nil, wantCode: 405,
			wantMsg: "method GET not allowed on /v1/traces: use POST", wantHeader: [2]string{"Allow", "POST"}},
		{name: "wrong method put", method: http.MethodPut, body: good, wantCode: 405, wantMsg: "method PUT not allowed"},
		{name: "wrong path", path: "/v1/trace", body: good, wantCode: 404,
			wantMsg: `no OTLP endpoint at "/v1/trace": use /v1/traces, /v1/metrics, /v1/logs or /v1development/profiles`},
		{name: "root path", path: "/", body: good, wantCode: 404, wantMsg: `no OTLP endpoint at "/"`},
		{name: "missing token", auth: "-", body: good, wantCode: 401,
			wantMsg: "missing or wrong bearer token", wantHeader: [2]string{"WWW-Authenticate", "Bearer"}},
		{name: "wrong token", auth: "Bearer t0ken2", body: good, wantCode: 401, wantMsg: "missing or wrong bearer token"},
		{name: "token without scheme", auth: token, body: good, wantCode: 401, wantMsg: "missing or wrong bearer token"},
		{name: "metrics protobuf empty", path: "/v1/metrics", body: nil, wantCode: 200},
		{name: "logs json empty", path: "/v1/logs", contentType: mediaJSON, body: []byte(`{}`), wantCode: 200},
		{name: "metrics truncated", path: "/v1/metrics", body: []byte{0x0a, 0x10, 0x01}, wantCode: 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method, path, ct, auth := tt.method, tt.path, tt.contentType, tt.auth
			if method == "" {
				method = http.MethodPost
			}
			if path == "" {
				path = "/v1/traces"
			}
			switch ct {
			case "":
				ct = mediaProto
			case "-":
				ct = ""
			}
			switch auth {
			case "":
				auth = "Bearer " + token
			case "-":
				auth = ""
			}
			code, hdr, body := doHTTP(t, method, addr, path, map[string]string{
				"Content-Type": ct, "Content-Encoding": tt.encoding, "Authorization": auth}, tt.body)
			if code != tt.wantCode {
				t.Fatalf("%s %s (%s, %d bytes) = %d %q, want %d", method, path, ct, len(tt.body), code, body, tt.wantCode)
			}
			respType := mediaJSON
			if strings.HasPrefix(ct, mediaProto) {
				respType = mediaProto
			}
			if got := hdr.Get("Content-Type"); got != respType {
				t.Errorf("response Content-Type = %q, want %q", got, respType)
			}
			if tt.wantHeader[0] != "" && hdr.Get(tt.wantHeader[0]) != tt.wantHeader[1] {
				t.Errorf("header %s = %q, want %q", tt.wantHeader[0], hdr.Get(tt.wantHeader[0]), tt.wantHeader[1])
			}
			if code == 200 {
				return
			}
			stat := decodeStatus(t, respType, body)
			if stat.Message == "" || !strings.Contains(stat.Message, tt.wantMsg) {
				t.Errorf("message = %q, want it to contain %q", stat.Message, tt.wantMsg)
			}
		})
	}
	st.Sync()
	// Accepted: 3 (protobuf) + 3 (gzip) + 1 + 1 (json); nothing else.
	if got := st.Snapshot().Stats.Accepted; got != 8 {
		t.Errorf("spans accepted = %d, want 8", got)
	}
}

// TestHTTPPartialSuccess checks the response body when the decoder refuses
// some spans: 200 with rejected_spans and a one-sentence message, in the
// request's format.
func TestHTTPPartialSuccess(t *testing.T) {
	srv, st := startServer(t, Config{}, model.Options{})
	_, addr := srv.Addrs()
	req := testRequest(4)
	req.ResourceSpans[0].ScopeSpans[0].Spans[2].SpanId = []byte{1, 2, 3} // wrong length
	for _, ct := range []string{mediaProto, mediaJSON} {
		t.Run(ct, func(t *testing.T) {
			var body []byte
			if ct == mediaProto {
				body = encodeRequest(t, req)
			} else {
				body = recordJSON(t, req)
			}
			code, hdr, resp := doHTTP(t, http.MethodPost, addr, "/v1/traces", map[string]string{"Content-Type": ct}, body)
			if code != 200 || hdr.Get("Content-Type") != ct {
				t.Fatalf("status %d, type %q, body %q; want 200 %s", code, hdr.Get("Content-Type"), resp, ct)
			}
			var out coltrace.ExportTraceServiceResponse
			if ct == mediaProto {
				err := proto.Unmarshal(resp, &out)
				if err != nil {
					t.Fatal(err)
				}
			} else if err := protojson.Unmarshal(resp, &out); err != nil {
				t.Fatal(err)
			}
			ps := out.GetPartialSuccess()
			if ps.GetRejectedSpans() != 1 || !strings.HasPrefix(ps.GetErrorMessage(), "1 span rejected: ") {
				t.Fatalf("partial_success = %v, want 1 rejected span with a message", ps)
			}
		})
	}
	st.Sync()
	if got := st.Snapshot().Stats.Stored; got != 3 {
		t.Errorf("stored %d spans, want 3 (the valid ones, once each)", got)
	}
	if got := srv.Stats().Rejected; got != 2 {
		t.Errorf("Stats().Rejected = %d, want 2", got)
	}
}

// recordJSON renders req as OTLP/JSON with the record encoder.
func recordJSON(t testing.TB, req *coltrace.ExportTraceServiceRequest) []byte {
	t.Helper()
	return AppendTraceRequestJSON(nil, req)
}

// TestHTTPCapsCountedInStore: attributes past the cap are dropped and values
// past the length cap cut, the span is still stored, and both are counted
// where the header and the summary read them.
func TestHTTPCapsCountedInStore(t *testing.T) {
	srv, st := startServer(t, Config{Limits: Limits{MaxAttrs: 4, MaxValueLen: 8}}, model.Options{})
	_, addr := srv.Addrs()
	req := testRequest(2)
	for _, sp := range req.ResourceSpans[0].ScopeSpans[0].Spans {
		for i := 0; i < 5; i++ { // 1 + 5 attributes: 2 over the cap of 4
			sp.Attributes = append(sp.Attributes, &commonpb.KeyValue{Key: "k" + string(rune('a'+i)), Value: &commonpb.AnyValue{
				Value: &commonpb.AnyValue_StringValue{StringValue: strings.Repeat("v", 4+i)}}}) // kd and ke never stored
		}
		sp.Attributes[1].Value = &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "0123456789abc"}}
	}
	code, _, body := doHTTP(t, http.MethodPost, addr, "/v1/traces", map[string]string{"Content-Type": mediaProto}, encodeRequest(t, req))
	if code != 200 {
		t.Fatalf("status %d: %s", code, body)
	}
	st.Sync()
	s := st.Snapshot()
	// Values cut: "ka" of each span, and the resource's 13-byte service.name.
	if s.Stats.Stored != 2 || s.Stats.AttrsDropped != 4 || s.Stats.ValuesTruncated != 3 {
		t.Fatalf("stored %d, attrs dropped %d, values truncated %d; want 2, 4, 3", s.Stats.Stored, s.Stats.AttrsDropped, s.Stats.ValuesTruncated)
	}
	sp := s.Rollouts[0].Fragments[0].Spans[0]
	if sp.Flags()&model.FlagAttrsCapped == 0 || sp.Attrs.Len(s.Interner()) != 4 {
		t.Fatalf("span flags %b with %d attrs; want the capped mark and 4 attrs", sp.Flags(), sp.Attrs.Len(s.Interner()))
	}
	if v, _ := sp.Attrs.Get(s.Interner(), "ka"); len(v.Str) > 8 {
		t.Fatalf("value %q longer than the cap of 8 bytes", v.Str)
	}
}
