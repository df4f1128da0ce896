package receiver

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/nemo-gym/gymtrace/model"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	collogs "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
)

// collectorFile builds what the Collector's file exporter writes, with the
// Collector's own marshalers (pdata): one traces, one metrics and one logs
// message. format is "proto" or "json"; perMessageZstd is its legacy
// compression: zstd: each message compressed, behind its length.
func collectorFile(t *testing.T, format string, perMessageZstd bool) []byte {
	t.Helper()
	td, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(encodeRequest(t, testRequest(6)))
	if err != nil {
		t.Fatal(err)
	}
	md, err := (&pmetric.ProtoUnmarshaler{}).UnmarshalMetrics(encodeRequest(t, metricsRequest([]namedPoints{{"gym.concurrency.queue_wait_duration_ms", 3}, {"tokens.generated.x", 2}})))
	if err != nil {
		t.Fatal(err)
	}
	logs := &collogs.ExportLogsServiceRequest{ResourceLogs: []*logspb.ResourceLogs{{ScopeLogs: []*logspb.ScopeLogs{{LogRecords: []*logspb.LogRecord{{TimeUnixNano: 1}, {TimeUnixNano: 2}}}}}}}
	ld, err := (&plog.ProtoUnmarshaler{}).UnmarshalLogs(encodeRequest(t, logs))
	if err != nil {
		t.Fatal(err)
	}
	var msgs [][]byte
	if format == "proto" {
		a, _ := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
		b, _ := (&pmetric.ProtoMarshaler{}).MarshalMetrics(md)
		c, _ := (&plog.ProtoMarshaler{}).MarshalLogs(ld)
		msgs = [][]byte{a, b, c}
	} else {
		a, _ := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
		b, _ := (&pmetric.JSONMarshaler{}).MarshalMetrics(md)
		c, _ := (&plog.JSONMarshaler{}).MarshalLogs(ld)
		msgs = [][]byte{a, b, c}
	}
	enc, _ := zstd.NewWriter(nil)
	defer enc.Close()
	var out bytes.Buffer
	for _, m := range msgs {
		if perMessageZstd {
			m = enc.EncodeAll(m, nil)
		}
		if format == "json" && !perMessageZstd {
			out.Write(m)
			out.WriteByte('\n')
			continue
		}
		var hdr [4]byte
		binary.BigEndian.PutUint32(hdr[:], uint32(len(m)))
		out.Write(hdr[:])
		out.Write(m)
	}
	return out.Bytes()
}

func zstdFile(t *testing.T, b []byte) []byte {
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	return enc.EncodeAll(b, nil)
}

// TestCollectorFileExporterFormats reads every form the Collector's file
// exporter writes, under names that give nothing away: format proto,
// format json, each with legacy per-message zstd, and with whole-file
// (native) zstd, plus gzip.
func TestCollectorFileExporterFormats(t *testing.T) {
	proto := collectorFile(t, "proto", false)
	jsonl := collectorFile(t, "json", false)
	tests := []struct {
		name, format, compression string
		data                      []byte
	}{
		{"proto", FormatLengthPrefixed, "", proto},
		{"proto, per-message zstd", FormatLengthPrefixed, "", collectorFile(t, "proto", true)},
		{"json, per-message zstd", FormatLengthPrefixed, "", collectorFile(t, "json", true)},
		{"proto, zstd file", FormatLengthPrefixed, "zstd", zstdFile(t, proto)},
		{"json, zstd file", FormatOTLPJSON, "zstd", zstdFile(t, jsonl)},
		{"proto, gzip file", FormatLengthPrefixed, "gzip", senderEncoders["gzip"](t, proto)},
		{"json, gzip inside zstd", FormatOTLPJSON, "zstd+gzip", zstdFile(t, senderEncoders["gzip"](t, jsonl))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "traces.out")
			if err := os.WriteFile(path, tt.data, 0o644); err != nil {
				t.Fatal(err)
			}
			st, spans, rep := loadFile(t, path, ReadOptions{})
			if len(spans) != 6 || rep.BadLines != 0 {
				t.Fatalf("%d spans, %d bad lines %v; want 6, 0", len(spans), rep.BadLines, rep.BadSamples)
			}
			if rep.MetricPoints != 5 || rep.LogRecords != 2 {
				t.Errorf("%d metric points, %d log records; want 5, 2", rep.MetricPoints, rep.LogRecords)
			}
			if m := st.Snapshot().Metrics; m["gym.concurrency.queue_wait_duration_ms"] != 3 || m["tokens.generated.x"] != 2 {
				t.Errorf("metrics by name: %v", m)
			}
			if f := rep.Files[0]; f.Format != tt.format || f.Compression != tt.compression {
				t.Errorf("format %q compression %q, want %q %q", f.Format, f.Compression, tt.format, tt.compression)
			}
		})
	}
}

// TestLengthPrefixedDamage checks a cut file keeps what came before and
// says where it broke.
func TestLengthPrefixedDamage(t *testing.T) {
	proto := collectorFile(t, "proto", false)
	path := filepath.Join(t.TempDir(), "cut.bin")
	os.WriteFile(path, proto[:len(proto)-5], 0o644)
	_, spans, rep := loadFile(t, path, ReadOptions{})
	if len(spans) != 6 || rep.BadLines != 1 || !strings.Contains(rep.BadSamples[0].String(), "cut.bin:3: truncated message") {
		t.Errorf("%d spans, bad %v; want 6 and message 3 truncated", len(spans), rep.BadSamples)
	}
}

// TestUnrecognisedFile checks binary data no reader takes fails with a
// hint instead of reading as "no spans".
func TestUnrecognisedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "capture.jsonl")
	data := bytes.Repeat([]byte{0xde, 0xad, 0xbe, 0xef, 0x00, 0x01}, 100)
	os.WriteFile(path, data, 0o644)
	st := model.NewStore(model.Options{})
	defer st.Close()
	rep, err := ReadFiles(st, []string{path}, ReadOptions{})
	if !errors.Is(err, ErrUnrecognised) || !strings.Contains(err.Error(), "length-prefixed protobuf (format: proto)") {
		t.Fatalf("err = %v, want ErrUnrecognised with the hint", err)
	}
	if rep.BadLines != 1 || rep.Files[0].Bad != 1 {
		t.Errorf("report: %d bad lines, file %+v", rep.BadLines, rep.Files[0])
	}
}

// TestProtoSignal checks the three signals are told apart, including a
// metric whose name is 16 bytes long, like a trace id.
func TestProtoSignal(t *testing.T) {
	if got := protoSignal(encodeRequest(t, testRequest(1))); got != signalTraces {
		t.Errorf("traces read as %v", got)
	}
	if got := protoSignal(encodeRequest(t, metricsRequest([]namedPoints{{"sixteen.bytes.ab", 1}}))); got != signalMetrics {
		t.Errorf("metrics read as %v", got)
	}
	logs := &collogs.ExportLogsServiceRequest{ResourceLogs: []*logspb.ResourceLogs{{ScopeLogs: []*logspb.ScopeLogs{{LogRecords: []*logspb.LogRecord{{TimeUnixNano: 5}}}}}}}
	if got := protoSignal(encodeRequest(t, logs)); got != signalLogs {
		t.Errorf("logs read as %v", got)
	}
}
