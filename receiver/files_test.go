package receiver

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nemo-gym/gymtrace/model"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
)

func writeFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestReadFilesFormats(t *testing.T) {
	pb := marshal(t, sampleRequest())
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(readFixture(t, "python-sdk-real.console.jsonl"))
	zw.Close()
	mixed := append(append([]byte{}, readFixture(t, "python-sdk-real.console.jsonl")...), otlpJSON(t, sampleRequest())...)
	tests := []struct {
		name   string
		file   string
		data   []byte
		format string
		spans  int
	}{
		{"otlp json lines", "c.jsonl", readFixture(t, "all.otlp.jsonl"), FormatOTLPJSON, 341},
		{"console", "c.log", readFixture(t, "per_rollout.console.jsonl"), FormatConsole, 332},
		{"protobuf by extension", "req.pb", pb, FormatProtobuf, 2},
		{"protobuf by content", "capture", pb, FormatProtobuf, 2},
		{"telemetrygen protobuf", "req.bin", readFixture(t, "req-telemetrygen-512.bin"), FormatProtobuf, 512},
		{"gzip console", "c.jsonl.gz", gz.Bytes(), FormatConsole, 6},
		{"console and otlp lines", "m.jsonl", mixed, FormatMixed, 8},
		{"text only", "server.log", []byte("INFO: started\nINFO: stopped\n"), FormatNone, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := writeFile(t, tt.file, tt.data)
			st := model.NewStore(model.Options{})
			defer st.Close()
			rep, err := ReadFiles(st, []string{p}, ReadOptions{BatchSize: 100})
			if err != nil {
				t.Fatal(err)
			}
			st.Sync()
			if rep.Files[0].Format != tt.format || rep.Spans != tt.spans || st.Snapshot().Stats.Stored != tt.spans {
				t.Errorf("format %q, %d spans (stored %d); want %q, %d", rep.Files[0].Format, rep.Spans, st.Snapshot().Stats.Stored, tt.format, tt.spans)
			}
			if rep.BadLines != 0 {
				t.Errorf("bad lines: %v", rep.BadSamples)
			}
		})
	}
}

func TestReadFilesBadLines(t *testing.T) {
	good := strings.Split(strings.TrimSpace(string(readFixture(t, "python-sdk-real.console.jsonl"))), "\n")
	lines := []string{
		good[0],
		`{"name": "x", "context": {"trace_id": "0xnothex", "span_id": "0x0000000000000001"}}`,
		good[1],
		`{"name": "broken", "context": {`,
		`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"AQIDBAUGBwgJCgsMDQ4PEA==","spanId":"0102030405060708"}]}]}]}`,
		good[2],
		`{"attributes": {"big": "` + strings.Repeat("x", 3000) + `"}}`,
		"plain text",
		good[3],
		good[4][:200],
	}
	p := writeFile(t, "bad.jsonl", []byte(strings.Join(lines, "\n")))
	st := model.NewStore(model.Options{})
	defer st.Close()
	rep, err := ReadFiles(st, []string{p}, ReadOptions{MaxLine: 2000})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range rep.BadSamples {
		got = append(got, strings.TrimPrefix(b.String(), p))
	}
	want := []string{
		`:2: context.trace_id: bad trace id "0xnothex"`,
		`:4: context: line ends inside a JSON value`,
		`:5: resourceSpans[0].scopeSpans[0].spans[0].traceId: bad hex id "AQIDBAUGBwgJCgsMDQ4PEA==": want hex digits (OTLP/JSON ids are hex, not base64)`,
		`:7: line longer than the 2000-byte line bound, skipped`,
		`:10: truncated last line (no newline at end of file): line ends inside a JSON value`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("bad lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if rep.Spans != 4 || rep.BadLines != 5 || rep.Skipped != 1 {
		t.Errorf("spans=%d bad=%d skipped=%d; want 4, 5, 1", rep.Spans, rep.BadLines, rep.Skipped)
	}
}

func TestReadFilesSeveral(t *testing.T) {
	// One file per process, a missing file, and stdin: what can be read is
	// loaded, and the error names the missing file.
	agent := writeFile(t, "agent.jsonl", readFixture(t, "python-sdk-real.console.jsonl"))
	missing := filepath.Join(t.TempDir(), "nope.jsonl")
	st := model.NewStore(model.Options{})
	defer st.Close()
	stdin := bytes.NewReader(readFixture(t, "all.otlp.jsonl"))
	rep, err := ReadFiles(st, []string{agent, missing, "-"}, ReadOptions{Stdin: stdin})
	if err == nil || !strings.Contains(err.Error(), "nope.jsonl") {
		t.Fatalf("error = %v, want one naming nope.jsonl", err)
	}
	st.Sync()
	if rep.Spans != 347 || st.Snapshot().Stats.Stored != 347 {
		t.Errorf("spans = %d, stored %d; want 347", rep.Spans, st.Snapshot().Stats.Stored)
	}
	if len(rep.Files) != 2 || rep.Files[1].Path != "stdin" {
		t.Errorf("files = %+v", rep.Files)
	}
}

func TestReadFilesCounts(t *testing.T) {
	in := strings.Join([]string{
		`{"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"gauge":{"dataPoints":[{},{}]}}]}]}]}`,
		`{"resourceLogs":[{"scopeLogs":[{"logRecords":[{},{},{}]}]}]}`,
		`{"body": "hello", "severity_number": 9, "severity_text": "INFO"}`,
	}, "\n") + "\n"
	st := model.NewStore(model.Options{})
	defer st.Close()
	rep, err := ReadStream(st, "x", strings.NewReader(in), ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st.Sync()
	s := st.Snapshot().Stats
	if rep.MetricPoints != 2 || rep.LogRecords != 4 || s.MetricPoints != 2 || s.LogRecords != 4 || rep.Skipped != 3 {
		t.Errorf("report points=%d logs=%d skipped=%d, store points=%d logs=%d; want 2, 4, 3", rep.MetricPoints, rep.LogRecords, rep.Skipped, s.MetricPoints, s.LogRecords)
	}
}

func TestReadLine(t *testing.T) {
	// Lines that straddle the reader's buffer, CRLF endings and a cut last line.
	long := strings.Repeat("a", 100<<10)
	in := "one\r\n" + long + "\n" + strings.Repeat("b", 300<<10) + "\nlast"
	st := model.NewStore(model.Options{})
	defer st.Close()
	rep, err := ReadStream(st, "x", strings.NewReader(in), ReadOptions{MaxLine: 200 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Files[0].Lines != 4 || rep.Skipped != 3 || rep.BadLines != 1 || rep.BadSamples[0].Line != 3 {
		t.Errorf("lines=%d skipped=%d bad=%v; want 4 lines, 3 skipped, line 3 too long", rep.Files[0].Lines, rep.Skipped, rep.BadSamples)
	}
}

// TestReadFilesDecodeAheadKeepsOrder reads OTLP/JSON lines that each
// bring a service of their own, the early lines far longer than the late
// ones (so later lines finish decoding first), mixed with lines read in
// order (text, a console span): services are numbered in file order, bad
// lines are sampled in file order, and the store holds what reading one
// line after another gives, every time.
func TestReadFilesDecodeAheadKeepsOrder(t *testing.T) {
	var file []byte
	const lines = 24
	for i := 0; i < lines; i++ {
		req := testRequest(1 + 400/(i+1))
		rs := req.ResourceSpans[0]
		rs.Resource.Attributes[0].Value.Value = &commonpb.AnyValue_StringValue{StringValue: fmt.Sprintf("nemo-gym/svc-%02d", i)}
		for _, sp := range rs.ScopeSpans[0].Spans {
			sp.TraceId[0] = byte(i)
		}
		file = append(append(file, otlpJSON(t, req)...), '\n')
		switch i % 6 {
		case 2:
			file = append(file, "plain text between requests\n"...)
		case 4:
			file = append(file, `{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "zz"}]}]}]}`+"\n"...)
		}
	}
	p := writeFile(t, "ahead.jsonl", file)
	var first string
	for run := 0; run < 20; run++ {
		st := model.NewStore(model.Options{PublishEvery: time.Hour})
		rep, err := ReadFiles(st, []string{p}, ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		st.Sync()
		snap := st.Snapshot()
		var b strings.Builder
		for id, r := range st.Interner().Resources()[1:] {
			fmt.Fprintf(&b, "%d=%s ", id+1, st.Interner().Str(r.Service))
		}
		for _, r := range snap.Rollouts {
			fmt.Fprintf(&b, "%s:%d ", r.ID, r.Spans)
		}
		for _, bl := range append(rep.BadSamples, rep.SkippedSamples...) {
			fmt.Fprintf(&b, "%s ", bl)
		}
		fmt.Fprintf(&b, "spans=%d bad=%d skipped=%d", rep.Spans, rep.BadLines, rep.Skipped)
		st.Close()
		if run == 0 {
			first = b.String()
			for i := 0; i < lines; i++ {
				if want := fmt.Sprintf("%d=nemo-gym/svc-%02d ", i+1, i); !strings.Contains(first, want) {
					t.Fatalf("services out of file order: want %q in %s", want, first)
				}
			}
			continue
		}
		if got := b.String(); got != first {
			t.Fatalf("run %d read differently:\n%s\nfirst:\n%s", run, got, first)
		}
	}
}
