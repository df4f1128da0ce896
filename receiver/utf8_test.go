package receiver

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/nemo-gym/gymtrace/model"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
)

// The generated types refuse to marshal invalid UTF-8: requests carrying it
// are built with same-length placeholders, then patched.
const (
	namePlaceholder  = "NAME_PLACEHOLDER"
	valuePlaceholder = "VALUE_PLACEHOLDER"
	badName          = "bad \xff\xfe name\xc3...." // two runs of bad bytes
	badValue         = "prompt \xed\xa0\x80 ok...."
)

var (
	repairedName  = "bad \uFFFD name\uFFFD...."
	repairedValue = "prompt \uFFFD ok...."
)

// badRequest is 512 spans, one with an invalid name and an invalid
// attribute value.
func badRequest() *coltrace.ExportTraceServiceRequest {
	req := testRequest(512)
	sp := req.ResourceSpans[0].ScopeSpans[0].Spans[300]
	sp.Name = namePlaceholder
	sp.Attributes = append(sp.Attributes, &commonpb.KeyValue{Key: "gen_ai.prompt", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: valuePlaceholder}}})
	return req
}

func patch(t testing.TB, b []byte) []byte {
	t.Helper()
	if len(badName) != len(namePlaceholder) || len(badValue) != len(valuePlaceholder) {
		t.Fatal("placeholders and their patches differ in length")
	}
	b = bytes.Replace(b, []byte(namePlaceholder), []byte(badName), 1)
	return bytes.Replace(b, []byte(valuePlaceholder), []byte(badValue), 1)
}

// TestInvalidUTF8KeepsBatch sends a batch of 512 spans, one with invalid
// UTF-8 in its name and in a value, over gRPC, HTTP protobuf and HTTP
// JSON: every span is kept, the strings stored with U+FFFD, the repairs
// counted, and the record is valid JSON that reads back the same.
func TestInvalidUTF8KeepsBatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rec.jsonl")
	srv, st := startServer(t, Config{RecordPath: path}, model.Options{})
	ga, ha := srv.Addrs()
	pb := patch(t, encodeRequest(t, badRequest()))
	js := patch(t, otlpJSON(t, badRequest()))
	if utf8.Valid(pb) || utf8.Valid(js) {
		t.Fatal("requests are not patched")
	}
	cc := dialRaw(t, ga)
	var resp coltrace.ExportTraceServiceResponse
	if err := cc.Invoke(context.Background(), traceExport, &rawRequest{b: pb}, &resp); err != nil || resp.PartialSuccess != nil {
		t.Fatalf("gRPC: %v %v", err, resp.PartialSuccess)
	}
	if code, body := postHTTP(t, ha, "/v1/traces", mediaProto, "", pb); code != 200 {
		t.Fatalf("HTTP protobuf: %d %s", code, body)
	}
	if code, body := postHTTP(t, ha, "/v1/traces", mediaJSON, "", js); code != 200 {
		t.Fatalf("HTTP JSON: %d %s", code, body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	st.Sync()
	snap := st.Snapshot()
	if snap.Stats.Accepted != 3*512 || snap.Stats.Stored != 512 {
		t.Errorf("accepted %d, stored %d; want 1536, 512", snap.Stats.Accepted, snap.Stats.Stored)
	}
	if snap.Stats.ValuesRepaired != 6 {
		t.Errorf("values repaired = %d, want 6 (name and value, three times)", snap.Stats.ValuesRepaired)
	}
	checkRepaired(t, st.Interner(), snapshotSpans(snap))
	rec, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !utf8.Valid(rec) {
		t.Fatal("record is not valid UTF-8")
	}
	reloaded, _, rep := loadFile(t, path, ReadOptions{})
	if rep.BadLines != 0 || rep.Spans != 3*512 || rep.Decode.ValuesRepaired != 0 {
		t.Fatalf("record: %d spans, %d bad lines %v, %d repaired; want 1536, 0, 0", rep.Spans, rep.BadLines, rep.BadSamples, rep.Decode.ValuesRepaired)
	}
	checkRepaired(t, reloaded.Interner(), snapshotSpans(reloaded.Snapshot()))
}

func checkRepaired(t *testing.T, in *model.Interner, spans model.Batch) {
	t.Helper()
	found := 0
	for i := range spans.Spans {
		sp := &spans.Spans[i]
		if in.Str(sp.Name) != repairedName {
			continue
		}
		found++
		if got := dumpSpan(in, spans.Traces[i], spans.ParentOf(i), sp, dumpOpts{}); !strings.Contains(got, repairedValue) {
			t.Errorf("span with the repaired name lacks the repaired value:\n%s", got)
		}
	}
	if found != 1 {
		t.Errorf("%d spans named %q, want 1", found, repairedName)
	}
}

// TestRepairSameInEveryDecoder checks the protobuf, OTLP/JSON and console
// decoders store the same repaired strings and count the same repairs.
func TestRepairSameInEveryDecoder(t *testing.T) {
	in, l := newLocal()
	req := badRequest()
	req.ResourceSpans[0].ScopeSpans[0].Spans = req.ResourceSpans[0].ScopeSpans[0].Spans[300:301]
	fromProto, rp, err := DecodeProto(l, patch(t, encodeRequest(t, req)), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	fromJSON, rj, err := DecodeJSON(l, patch(t, otlpJSON(t, req)), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if rp.ValuesRepaired != 2 || rj.ValuesRepaired != 2 {
		t.Errorf("repairs: protobuf %d, JSON %d; want 2 each", rp.ValuesRepaired, rj.ValuesRepaired)
	}
	if a, b := dumpSpans(in, fromProto, dumpOpts{times: true}), dumpSpans(in, fromJSON, dumpOpts{times: true}); a != b {
		t.Errorf("protobuf:\n%s\nJSON:\n%s", a, b)
	}
	// A console line, one bad byte in its name and one in an attribute (in
	// an escaped string too).
	line := `{"name": "` + badName + `", "context": {"trace_id": "0x243fcc768c47930834e6ed7fbc6634f7", "span_id": "0x5ca30d27c1578b1c", "trace_state": "[]"}, "kind": "SpanKind.CLIENT", "parent_id": null, "start_time": "2026-11-29T18:55:26.369990Z", "end_time": "2026-11-29T18:55:26.384940Z", "status": {"status_code": "UNSET"}, "attributes": {"gen_ai.prompt": "\n` + "\xed\xa0\x80" + `"}, "events": [], "links": [], "resource": {"attributes": {"service.name": "x"}, "schema_url": ""}}`
	path := filepath.Join(t.TempDir(), "console.log")
	os.WriteFile(path, []byte(line+"\n"), 0o644)
	cst, spans, rep := loadFile(t, path, ReadOptions{})
	if len(spans) != 1 || rep.Decode.ValuesRepaired != 2 {
		t.Fatalf("console: %d spans, %d repaired, bad %v; want 1, 2", len(spans), rep.Decode.ValuesRepaired, rep.BadSamples)
	}
	if got := cst.Interner().Str(spans[0].Name); got != repairedName {
		t.Errorf("console name %q, want %q", got, repairedName)
	}
	if got := dumpSpan(cst.Interner(), model.TraceID{}, model.SpanID{}, &spans[0], dumpOpts{}); strings.Count(got, "\uFFFD") != 3 {
		t.Errorf("console value not repaired:\n%s", got)
	}
	if cst.Snapshot().Stats.ValuesRepaired != 2 {
		t.Errorf("store counts %d repairs, want 2", cst.Snapshot().Stats.ValuesRepaired)
	}
}
