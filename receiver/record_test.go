package receiver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nemo-gym/gymtrace/internal/golden"
	"github.com/nemo-gym/gymtrace/model"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
)

// TestRecordJSON checks the record encoder three ways: the line is valid
// JSON on one line, it matches its golden file, and the JSON decoder reads
// it back to exactly the spans the protobuf decoder reads from the binary
// request (and to what an independent protojson-based encoder gives).
func TestRecordJSON(t *testing.T) {
	odd := sampleRequest()
	sp := odd.ResourceSpans[0].ScopeSpans[0].Spans[1]
	sp.Name = "line\nbreak \"quoted\" \\ tab\t é ✓ \x01"
	sp.Attributes = append(sp.Attributes,
		kv("nan", dblv(math.NaN())), kv("inf", dblv(math.Inf(-1))), kv("big", intv(math.MaxInt64)),
		kv("empty", &commonpb.AnyValue{}))
	tests := []struct {
		name string
		req  *coltrace.ExportTraceServiceRequest
	}{
		{name: "sample", req: sampleRequest()},
		{name: "escapes_and_specials", req: odd},
		{name: "empty", req: &coltrace.ExportTraceServiceRequest{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			line := AppendTraceRequestJSON(nil, tt.req)
			if !json.Valid(line) || bytes.ContainsRune(line, '\n') {
				t.Fatalf("not one line of valid JSON: %s", line)
			}
			golden.Check(t, []byte(string(line)+"\n"))

			in, l := newLocal()
			fromProto, _, err := DecodeProto(l, marshal(t, tt.req), Limits{})
			if err != nil {
				t.Fatal(err)
			}
			fromRecord, _, err := DecodeJSON(l, line, Limits{})
			if err != nil {
				t.Fatalf("DecodeJSON(record line): %v\n%s", err, line)
			}
			want := dumpSpans(in, fromProto, dumpOpts{times: true})
			if got := dumpSpans(in, fromRecord, dumpOpts{times: true}); got != want {
				t.Errorf("record line decodes to\n%s\nprotobuf decodes to\n%s", got, want)
			}
			if tt.name != "escapes_and_specials" { // protojson writes NaN the same way, but keep the cross-check simple
				fromOther, _, err := DecodeJSON(l, otlpJSON(t, tt.req), Limits{})
				if err != nil {
					t.Fatal(err)
				}
				if got := dumpSpans(in, fromOther, dumpOpts{times: true}); got != want {
					t.Errorf("protojson-based encoding decodes differently:\n%s", got)
				}
			}
		})
	}
}

func TestAppendRecString(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"a\"b\\c", "a\"b\\c"},
		{"\n\r\t\x00\x1f", "\n\r\t\x00\x1f"},
		{"é✓😀", "é✓😀"},
		{"bad\xffutf8", "bad\ufffdutf8"},
	}
	for _, tt := range tests {
		b := appendJSONString(nil, tt.in)
		var got string
		if err := json.Unmarshal(b, &got); err != nil {
			t.Errorf("appendJSONString(%q) = %s: invalid JSON: %v", tt.in, b, err)
			continue
		}
		if got != tt.want {
			t.Errorf("appendJSONString(%q) reads back as %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestRecordRoundTrip records what SDK exporters send over every transport,
// then reloads the file with the file reader: the spans are the ones the
// live store holds.
func TestRecordRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rec.jsonl")
	st := model.NewStore(model.Options{})
	defer st.Close()
	srv, err := NewServer(Config{Store: st, GRPCAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", RecordPath: path})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, tr := range transports {
		f := newFleet(t, func() sdktrace.SpanExporter { return newExporter(t, srv, tr, nil) }, tr.batchMax, false)
		f.job(context.Background(), tr.name, 2, 2)
		f.shutdown(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	st.Sync()
	live := st.Snapshot()
	if live.Stats.Stored != len(transports)*(2*9+1) {
		t.Fatalf("live store holds %d spans, want %d", live.Stats.Stored, len(transports)*19)
	}
	if rec := srv.Stats().Recorded; rec == 0 {
		t.Fatal("Stats().Recorded = 0")
	}
	reloaded, _, rep := loadFile(t, path, ReadOptions{})
	if rep.BadLines != 0 || rep.Skipped != 0 {
		t.Fatalf("reading the record: %d bad, %d skipped lines: %v %v", rep.BadLines, rep.Skipped, rep.BadSamples, rep.SkippedSamples)
	}
	if n := int64(strings.Count(readFile(t, path), "\n")); n != srv.Stats().Recorded {
		t.Errorf("record has %d lines, Stats().Recorded = %d", n, srv.Stats().Recorded)
	}
	want := dumpSpans(st.Interner(), snapshotSpans(live), dumpOpts{times: true})
	if got := dumpSpans(reloaded.Interner(), snapshotSpans(reloaded.Snapshot()), dumpOpts{times: true}); got != want {
		t.Errorf("reloaded record differs from the live store\ngot:\n%.2000s\nwant:\n%.2000s", got, want)
	}
	if got, want := renderTrees(reloaded.Snapshot()), renderTrees(live); got != want {
		t.Errorf("reloaded trees differ\ngot:\n%s\nwant:\n%s", got, want)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// recordLines renders req as the record writes it.
func recordLines(t *testing.T, req *coltrace.ExportTraceServiceRequest) []byte {
	t.Helper()
	lines, err := appendRecordLines(nil, recordItem{body: encodeRequest(t, req), format: formatProto})
	if err != nil {
		t.Fatal(err)
	}
	return lines
}

// TestRecordTruncatedLastLine cuts the record's last line short, as a kill
// mid-write does: the reader reports that line with its file:line and
// loads everything before it, and recording again first cuts the partial
// line off (it was never acknowledged), so the record is whole again.
func TestRecordTruncatedLastLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rec.jsonl")
	r, err := OpenRecorder(path, RecordOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const lines = 3
	for i := 0; i < lines; i++ {
		req := testRequest(4)
		for _, sp := range req.ResourceSpans[0].ScopeSpans[0].Spans {
			sp.TraceId[0] = byte(i)
		}
		if err := r.write(ctx, recordLines(t, req), 4); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	full := readFile(t, path)
	cut := full[:len(full)-len(full)/(2*lines)]
	if err := os.WriteFile(path, []byte(cut), 0o644); err != nil {
		t.Fatal(err)
	}
	_, spans, rep := loadFile(t, path, ReadOptions{})
	if len(spans) != (lines-1)*4 {
		t.Errorf("loaded %d spans, want %d (all but the cut line)", len(spans), (lines-1)*4)
	}
	if rep.BadLines != 1 || len(rep.BadSamples) != 1 || rep.BadSamples[0].Line != lines || rep.BadSamples[0].File != path {
		t.Fatalf("bad lines = %d %v, want the cut line %s:%d", rep.BadLines, rep.BadSamples, path, lines)
	}

	r, err = OpenRecorder(path, RecordOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.write(ctx, recordLines(t, testRequest(2)), 2); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	_, spans, rep = loadFile(t, path, ReadOptions{})
	if len(spans) != (lines-1)*4+2 || rep.BadLines != 0 {
		t.Errorf("after appending: %d spans, %d bad lines %v; want %d and none", len(spans), rep.BadLines, rep.BadSamples, (lines-1)*4+2)
	}
}

// TestRecordWholeLastLineWithoutNewline appends to a file whose last line
// is whole but has no newline (written by another tool): it is kept, and
// the next line starts on a line of its own.
func TestRecordWholeLastLineWithoutNewline(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rec.jsonl")
	first := bytes.TrimSuffix(recordLines(t, testRequest(3)), []byte("\n"))
	if err := os.WriteFile(path, first, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := OpenRecorder(path, RecordOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	req := testRequest(2)
	for _, sp := range req.ResourceSpans[0].ScopeSpans[0].Spans {
		sp.TraceId = bytes.Repeat([]byte{0xcd}, 16)
	}
	if err := r.write(ctx, recordLines(t, req), 2); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	_, spans, rep := loadFile(t, path, ReadOptions{})
	if len(spans) != 5 || rep.BadLines != 0 {
		t.Errorf("%d spans, %d bad lines %v; want 5 and none", len(spans), rep.BadLines, rep.BadSamples)
	}
}

// TestRecorderStalled gives the record a writer that never returns: each
// request is refused as stalled after the wait instead of acknowledged,
// the counts say exactly what the writer holds, and Close gives up on it
// when its context ends, with the same counts.
func TestRecorderStalled(t *testing.T) {
	w := blockingWriter{make(chan struct{})}
	r := NewRecorder(w, RecordOptions{Wait: 100 * time.Millisecond})
	ctx := context.Background()
	var refused int64
	for i := 0; i < 3; i++ {
		if err := r.write(ctx, recordLines(t, testRequest(5)), 5); !errors.Is(err, errRecordStalled) {
			t.Fatalf("write %d into a blocked writer = %v, want stalled", i, err)
		}
		refused += 5
	}
	// The first request is in the writer's hands; the others were taken
	// back before it got them, or are in its hands too.
	reqs, spans := r.Unwritten()
	if reqs < 1 || reqs > 3 || spans != 5*reqs {
		t.Errorf("Unwritten() = %d requests, %d spans; want 1 to 3 requests of 5 spans", reqs, spans)
	}
	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	err := r.Close(cctx)
	var ab *RecordAbandonedError
	if !errors.As(err, &ab) || ab.Requests != reqs || ab.Spans != spans {
		t.Fatalf("Close = %v, want abandoned with %d requests, %d spans", err, reqs, spans)
	}
	if err := r.write(ctx, recordLines(t, testRequest(1)), 1); !errors.Is(err, errRecordClosed) {
		t.Errorf("write after Close = %v, want closed", err)
	}
	close(w.c)
}

type blockingWriter struct{ c chan struct{} }

func (w blockingWriter) Write(p []byte) (int, error) { <-w.c; return len(p), nil }
