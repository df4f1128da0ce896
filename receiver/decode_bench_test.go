package receiver

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"github.com/nemo-gym/gymtrace/internal/cputime"
	"github.com/nemo-gym/gymtrace/model"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

var consoleSpans = flag.Int("console-spans", 100_000, "spans per open in BenchmarkConsoleOpen (1000000 for the 1M-span figure)")

// gymRequest builds a Gym-shaped 512-span request from the fixture: the four
// processes' spans, grouped by resource, ids varied per copy.
func gymRequest(tb testing.TB) *coltrace.ExportTraceServiceRequest {
	tb.Helper()
	raw, err := os.ReadFile("testdata/all.otlp.jsonl")
	if err != nil {
		tb.Fatal(err)
	}
	var groups []*tracepb.ResourceSpans
	for _, line := range bytes.Split(bytes.TrimSpace(raw), []byte("\n")) {
		var req jTraceReq
		if err := json.Unmarshal(line, &req); err != nil {
			tb.Fatal(err)
		}
		for _, rs := range req.ResourceSpans {
			p, err := rs.proto()
			if err != nil {
				tb.Fatal(err)
			}
			groups = append(groups, p)
		}
	}
	out := &coltrace.ExportTraceServiceRequest{}
	n := 0
	for copyN := 0; n < 512; copyN++ {
		for _, g := range groups {
			c := proto.Clone(g).(*tracepb.ResourceSpans)
			spans := c.ScopeSpans[0].Spans
			if len(spans) > 512-n {
				spans = spans[:512-n]
			}
			for _, sp := range spans {
				sp.SpanId[0] ^= byte(copyN)
				if len(sp.ParentSpanId) == 8 {
					sp.ParentSpanId[0] ^= byte(copyN)
				}
			}
			c.ScopeSpans = c.ScopeSpans[:1]
			c.ScopeSpans[0].Spans = spans
			out.ResourceSpans = append(out.ResourceSpans, c)
			n += len(spans)
			if n == 512 {
				break
			}
		}
	}
	return out
}

func BenchmarkDecode(b *testing.B) {
	gym := marshal(b, gymRequest(b))
	tgen, err := os.ReadFile("testdata/req-telemetrygen-512.bin")
	if err != nil {
		b.Fatal(err)
	}
	var tgenReq coltrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(tgen, &tgenReq); err != nil {
		b.Fatal(err)
	}
	inputs := []struct {
		name string
		pb   []byte
		req  *coltrace.ExportTraceServiceRequest
	}{
		{"gym512", gym, gymRequest(b)},
		{"telemetrygen512", tgen, &tgenReq},
	}
	for _, in := range pipelineInputs[:2] { // the yardstick's real Gym requests
		pb := benchReqFile(b, in.file)
		var req coltrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(pb, &req); err != nil {
			b.Fatal(err)
		}
		inputs = append(inputs, struct {
			name string
			pb   []byte
			req  *coltrace.ExportTraceServiceRequest
		}{in.name, pb, &req})
	}
	for _, in := range inputs {
		js := otlpJSON(b, in.req)
		n := 0
		for _, rs := range in.req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				n += len(ss.Spans)
			}
		}
		b.Run(in.name+"/protowire", func(b *testing.B) {
			l := model.NewLocal(model.NewInterner())
			b.ReportAllocs()
			b.SetBytes(int64(len(in.pb)))
			defer cputime.Timer(b)()
			for b.Loop() {
				batch, _, err := DecodeProto(l, in.pb, Limits{})
				if err != nil || len(batch.Spans) != n {
					b.Fatalf("%d spans, %v", len(batch.Spans), err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "spans/s")
		})
		b.Run(in.name+"/proto.Unmarshal", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(in.pb)))
			for b.Loop() {
				var req coltrace.ExportTraceServiceRequest
				if err := proto.Unmarshal(in.pb, &req); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "spans/s")
		})
		b.Run(in.name+"/json", func(b *testing.B) {
			l := model.NewLocal(model.NewInterner())
			b.ReportAllocs()
			b.SetBytes(int64(len(js)))
			defer cputime.Timer(b)()
			for b.Loop() {
				batch, _, err := DecodeJSON(l, js, Limits{})
				if err != nil || len(batch.Spans) != n {
					b.Fatalf("%d spans, %v", len(batch.Spans), err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "spans/s")
		})
		// The encoding/json path DecodeJSON replaced, for comparison.
		b.Run(in.name+"/json-reference", func(b *testing.B) {
			l := model.NewLocal(model.NewInterner())
			b.ReportAllocs()
			b.SetBytes(int64(len(js)))
			for b.Loop() {
				batch, _, err := decodeJSONRef(l, js, Limits{})
				if err != nil || len(batch.Spans) != n {
					b.Fatalf("%d spans, %v", len(batch.Spans), err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "spans/s")
		})
	}
}

func BenchmarkConsoleLine(b *testing.B) {
	raw, err := os.ReadFile("testdata/all.console.jsonl")
	if err != nil {
		b.Fatal(err)
	}
	var lines [][]byte
	for _, line := range bytes.Split(raw, []byte("\n")) {
		if bytes.HasPrefix(line, []byte(`{"name"`)) {
			lines = append(lines, line)
		}
	}
	l := model.NewLocal(model.NewInterner())
	c := newConsoleDecoder(l, Limits{})
	defer c.release()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, _, kind, err := c.line(lines[i%len(lines)]); err != nil || kind != recSpan {
			b.Fatal(kind, err)
		}
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "spans/s")
}

// consoleStream yields copies of the console fixture, each with its own
// trace id, so every copy is new to the store: a long NeMo Gym log.
type consoleStream struct {
	tmpl    []byte
	offsets []int // where the fixture's trace id text starts
	left    int   // copies still to yield
	n       int
	buf     []byte
	pos     int
}

func newConsoleStream(tb testing.TB, spans int) (*consoleStream, int) {
	raw, err := os.ReadFile("testdata/all.console.jsonl")
	if err != nil {
		tb.Fatal(err)
	}
	const tid = "243fcc768c47930834e6ed7fbc6634f7"
	s := &consoleStream{tmpl: raw}
	for i := 0; ; {
		j := bytes.Index(raw[i:], []byte(tid))
		if j < 0 {
			break
		}
		s.offsets = append(s.offsets, i+j)
		i += j + len(tid)
	}
	copies := (spans + 340) / 341
	s.left = copies
	return s, copies * 341
}

func (s *consoleStream) Read(p []byte) (int, error) {
	if s.pos == len(s.buf) {
		if s.left == 0 {
			return 0, io.EOF
		}
		s.left--
		s.n++
		s.buf = append(s.buf[:0], s.tmpl...)
		id := fmt.Appendf(nil, "%032x", s.n)
		for _, o := range s.offsets {
			copy(s.buf[o:], id)
		}
		s.pos = 0
	}
	n := copy(p, s.buf[s.pos:])
	s.pos += n
	return n, nil
}

// BenchmarkConsoleOpen measures opening a long console log end to end: read,
// parse, and store (tree building included), as `gymtrace open` does.
func BenchmarkConsoleOpen(b *testing.B) {
	b.ReportAllocs()
	var total int
	var elapsed time.Duration
	var cpu int64
	for b.Loop() {
		stream, spans := newConsoleStream(b, *consoleSpans)
		st := model.NewStore(model.Options{})
		start, c0 := time.Now(), cputime.Now()
		rep, err := ReadStream(st, "gym.log", stream, ReadOptions{})
		st.Sync()
		elapsed += time.Since(start)
		cpu += cputime.Now() - c0
		if err != nil || rep.Spans != spans || st.Snapshot().Stats.Stored != spans {
			b.Fatalf("read %d spans (stored %d), %v; want %d", rep.Spans, st.Snapshot().Stats.Stored, err, spans)
		}
		total += spans
		st.Close()
	}
	b.ReportMetric(float64(total)/elapsed.Seconds(), "spans/s")
	b.ReportMetric(float64(cpu)/float64(total)/1e3, "cpu-us/span")
}
