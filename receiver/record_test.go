package receiver

import (
	"bytes"
	"context"
	"encoding/json"
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
			want := dumpSpans(in, fromProto.Spans, dumpOpts{times: true})
			if got := dumpSpans(in, fromRecord.Spans, dumpOpts{times: true}); got != want {
				t.Errorf("record line decodes to\n%s\nprotobuf decodes to\n%s", got, want)
			}
			if tt.name != "escapes_and_specials" { // protojson writes NaN the same way, but keep the cross-check simple
				fromOther, _, err := DecodeJSON(l, otlpJSON(t, tt.req), Limits{})
				if err != nil {
					t.Fatal(err)
				}
				if got := dumpSpans(in, fromOther.Spans, dumpOpts{times: true}); got != want {
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
	reloaded, spans, rep := loadFile(t, path, ReadOptions{})
	if rep.BadLines != 0 || rep.Skipped != 0 {
		t.Fatalf("reading the record: %d bad, %d skipped lines: %v %v", rep.BadLines, rep.Skipped, rep.BadSamples, rep.SkippedSamples)
	}
	if n := int64(strings.Count(readFile(t, path), "\n")); n != srv.Stats().Recorded {
		t.Errorf("record has %d lines, Stats().Recorded = %d", n, srv.Stats().Recorded)
	}
	want := dumpSpans(st.Interner(), snapshotSpans(live), dumpOpts{times: true})
	if got := dumpSpans(reloaded.Interner(), spans, dumpOpts{times: true}); got != want {
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

// TestRecordTruncatedLastLine cuts the record's last line short, as a crash
// mid-write would: the reader reports that line with its file:line and
// loads everything before it.
func TestRecordTruncatedLastLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rec.jsonl")
	r, err := OpenRecorder(path, 4)
	if err != nil {
		t.Fatal(err)
	}
	const lines = 3
	for i := 0; i < lines; i++ {
		req := testRequest(4)
		for _, sp := range req.ResourceSpans[0].ScopeSpans[0].Spans {
			sp.TraceId[0] = byte(i)
		}
		if !r.reserve() {
			t.Fatal("reserve refused with an empty queue")
		}
		r.push(encodeRequest(t, req), formatProto, 4)
	}
	if err := r.Close(); err != nil {
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

	// Recording again appends after a newline, so the cut line stays one
	// bad line and the new request loads.
	r, err = OpenRecorder(path, 4)
	if err != nil {
		t.Fatal(err)
	}
	if !r.reserve() {
		t.Fatal("reserve refused")
	}
	r.push(encodeRequest(t, testRequest(2)), formatProto, 2)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	_, spans, rep = loadFile(t, path, ReadOptions{})
	if len(spans) != (lines-1)*4+2 || rep.BadLines != 1 {
		t.Errorf("after appending: %d spans, %d bad lines; want %d and 1", len(spans), rep.BadLines, (lines-1)*4+2)
	}
}

// TestRecorderQueueFull fills a tiny record queue and checks that the
// server refuses (retryably) rather than acknowledging unrecorded spans.
func TestRecorderQueueFull(t *testing.T) {
	r := NewRecorder(blockingWriter{make(chan struct{})}, 2)
	if !r.reserve() || !r.reserve() {
		t.Fatal("reserve refused below capacity")
	}
	if r.reserve() {
		t.Fatal("reserve succeeded past capacity")
	}
	r.release()
	if !r.reserve() {
		t.Fatal("reserve refused after a release")
	}
	r.release()
	r.release()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if r.reserve() {
		t.Fatal("reserve succeeded after Close")
	}
}

type blockingWriter struct{ c chan struct{} }

func (w blockingWriter) Write(p []byte) (int, error) { <-w.c; return len(p), nil }
