package receiver

import (
	"bytes"
	stdflate "compress/flate"
	stdgzip "compress/gzip"
	stdzlib "compress/zlib"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/nemo-gym/gymtrace/model"
	"github.com/pierrec/lz4/v4"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	grpcstatus "google.golang.org/grpc/status"
)

// senderEncoders compress as the Collector's HTTP exporter does, with the
// libraries it uses (stdlib gzip/zlib, golang/snappy, klauspost zstd,
// pierrec lz4): independent of the decoders under test, except zstd.
var senderEncoders = map[string]func(t testing.TB, b []byte) []byte{
	"gzip": func(t testing.TB, b []byte) []byte {
		var buf bytes.Buffer
		w := stdgzip.NewWriter(&buf)
		w.Write(b)
		w.Close()
		return buf.Bytes()
	},
	"zlib": zlibBytes,
	// The Collector and Python's zlib.compress both send zlib under deflate.
	"deflate": zlibBytes,
	"zstd": func(t testing.TB, b []byte) []byte {
		w, err := zstd.NewWriter(nil)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		return w.EncodeAll(b, nil)
	},
	"snappy": func(_ testing.TB, b []byte) []byte { return snappy.Encode(nil, b) },
	"x-snappy-framed": func(_ testing.TB, b []byte) []byte {
		var buf bytes.Buffer
		w := snappy.NewBufferedWriter(&buf)
		w.Write(b)
		w.Close()
		return buf.Bytes()
	},
	"lz4": func(t testing.TB, b []byte) []byte {
		var buf bytes.Buffer
		w := lz4.NewWriter(&buf)
		if _, err := w.Write(b); err != nil {
			t.Fatal(err)
		}
		w.Close()
		return buf.Bytes()
	},
}

func zlibBytes(_ testing.TB, b []byte) []byte {
	var buf bytes.Buffer
	w := stdzlib.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

// TestHTTPEveryEncoding posts one request per Content-Encoding the
// Collector's HTTP receiver accepts, protobuf and JSON, and checks every span
// is stored; then a bomb of each is refused with 413 under the bound.
func TestHTTPEveryEncoding(t *testing.T) {
	srv, st := startServer(t, Config{MaxRecvBytes: 1 << 20, MaxDecompressed: 256 << 10}, model.Options{})
	_, ha := srv.Addrs()
	pb := encodeRequest(t, testRequest(5))
	js := otlpJSON(t, testRequest(5))
	want := 0
	for enc, compress := range senderEncoders {
		for _, body := range []struct {
			ct string
			b  []byte
		}{{mediaProto, pb}, {mediaJSON, js}} {
			code, resp := postHTTP(t, ha, "/v1/traces", body.ct, enc, compress(t, body.b))
			if code != 200 {
				t.Errorf("%s %s: %d %s", enc, body.ct, code, resp)
			}
			want += 5
		}
	}
	// Framed snappy under plain "snappy", as Collectors before v0.125 sent.
	if code, resp := postHTTP(t, ha, "/v1/traces", mediaProto, "snappy", senderEncoders["x-snappy-framed"](t, pb)); code != 200 {
		t.Errorf("framed snappy as snappy: %d %s", code, resp)
	}
	want += 5
	// A raw deflate stream under deflate, as some clients send.
	var raw bytes.Buffer
	fw, _ := stdflate.NewWriter(&raw, stdflate.DefaultCompression)
	fw.Write(pb)
	fw.Close()
	if code, resp := postHTTP(t, ha, "/v1/traces", mediaProto, "deflate", raw.Bytes()); code != 200 {
		t.Errorf("raw deflate: %d %s", code, resp)
	}
	want += 5
	st.Sync()
	if got := st.Snapshot().Stats.Accepted; got != int64(want) {
		t.Errorf("accepted %d spans, want %d", got, want)
	}
	bomb := make([]byte, 1<<20)
	for enc, compress := range senderEncoders {
		code, resp := postHTTP(t, ha, "/v1/traces", mediaProto, enc, compress(t, bomb))
		if code != 413 || !strings.Contains(string(resp), "decompressed body larger than the 262144-byte limit") {
			t.Errorf("%s bomb: %d %s, want 413", enc, code, resp)
		}
		code, resp = postHTTP(t, ha, "/v1/traces", mediaProto, enc, []byte("garbage, not compressed at all"))
		if code != 400 || !strings.Contains(string(resp), "bad "+enc+" body") {
			t.Errorf("%s garbage: %d %s, want 400", enc, code, resp)
		}
	}
	if got := srv.Stats().RequestsRefused[ReasonTooLarge]; got != int64(len(senderEncoders)) {
		t.Errorf("requests_refused[too_large] = %d, want %d", got, len(senderEncoders))
	}
}

// syncWriter serialises writes from the server's goroutines.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func (s *syncWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprint(s.w)
}

// TestGRPCEveryCompressor sends through each compressor the Collector's gRPC
// receiver registers, and a bomb through each, refused past the bound.
func TestGRPCEveryCompressor(t *testing.T) {
	srv, st := startServer(t, Config{MaxRecvBytes: 64 << 10}, model.Options{})
	ga, _ := srv.Addrs()
	cc := dialRaw(t, ga)
	good := encodeRequest(t, testRequest(4))
	for i, c := range []string{"gzip", "zstd", "snappy"} {
		var resp coltrace.ExportTraceServiceResponse
		if err := cc.Invoke(context.Background(), traceExport, &rawRequest{b: good}, &resp, grpc.UseCompressor(c)); err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		st.Sync()
		if got := st.Snapshot().Stats.Accepted; got != int64(4*(i+1)) {
			t.Fatalf("%s: accepted %d spans, want %d", c, got, 4*(i+1))
		}
		err := cc.Invoke(context.Background(), traceExport, &rawRequest{b: make([]byte, 1<<20)}, &resp, grpc.UseCompressor(c))
		// "after decompression" proves the message went compressed.
		if s := grpcstatus.Convert(err); s.Code() != codes.ResourceExhausted || !strings.Contains(s.Message(), "after decompression") {
			t.Errorf("%s bomb: %v %q, want ResourceExhausted after decompression", c, s.Code(), s.Message())
		}
	}
}

// TestGRPCSnappyReadsCollectorFrames checks the gRPC snappy decompressor
// reads what the Collector's snappy compressor (golang/snappy's framed
// writer) produces.
func TestGRPCSnappyReadsCollectorFrames(t *testing.T) {
	msg := bytes.Repeat([]byte("otlp payload "), 10000)
	var buf bytes.Buffer
	w := snappy.NewBufferedWriter(&buf)
	w.Write(msg)
	w.Close()
	r, err := grpcSnappy{}.Decompress(&buf)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	if err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("decompressed %d bytes (err %v), want %d", len(got), err, len(msg))
	}
}

// brotli is a compressor gymtrace does not register: the old-style client
// option sends it without registering it in this process.
type brotli struct{}

func (brotli) Do(w io.Writer, p []byte) error { _, err := w.Write(p); return err }
func (brotli) Type() string                   { return "br" }

// TestUnsupportedEncodingCounted checks a refused encoding is counted by
// reason on both transports and logged once, naming the client and what it
// sent.
func TestUnsupportedEncodingCounted(t *testing.T) {
	log := &syncWriter{w: new(bytes.Buffer)}
	srv, st := startServer(t, Config{Log: log}, model.Options{})
	ga, ha := srv.Addrs()
	good := encodeRequest(t, testRequest(2))
	for range 3 {
		if code, _ := postHTTP(t, ha, "/v1/traces", mediaProto, "br", good); code != 415 {
			t.Fatalf("br over HTTP: %d, want 415", code)
		}
	}
	cc, err := grpc.NewClient(ga, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(rawClientCodec{})), grpc.WithCompressor(brotli{}))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	err = cc.Invoke(context.Background(), traceExport, &rawRequest{b: good}, new(coltrace.ExportTraceServiceResponse))
	if s := grpcstatus.Convert(err); s.Code() != codes.Unimplemented {
		t.Fatalf("br over gRPC: %v, want Unimplemented", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for srv.Stats().RequestsRefused[ReasonEncoding] < 4 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got := srv.Stats().RequestsRefused; got[ReasonEncoding] != 4 || len(got) != 1 {
		t.Errorf("requests_refused = %v, want {%s: 4}", got, ReasonEncoding)
	}
	for st.Snapshot().Stats.RequestsRefused < 4 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if s := st.Snapshot().Stats; s.RequestsRefused != 4 || s.LastRefusal != ReasonEncoding {
		t.Errorf("store: %d requests refused, last %q; want 4, %s", s.RequestsRefused, s.LastRefusal, ReasonEncoding)
	}
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "127.0.0.1:") || !strings.Contains(lines[0], `content-encoding "br"`) {
		t.Errorf("log, want one line naming the client and the encoding:\n%s", log.String())
	}
}

// TestRefusalLogRateLimited checks one reason logs at once, then at most
// once a minute with the count since.
func TestRefusalLogRateLimited(t *testing.T) {
	var log bytes.Buffer
	r := newRefusals(&log)
	now := time.Unix(1000, 0)
	r.now = func() time.Time { return now }
	for i := range 5 {
		r.add(ReasonBusy, "1.2.3.4:5", "POST /v1/traces", fmt.Sprint("full ", i))
	}
	r.add(ReasonAuth, "1.2.3.4:5", "POST /v1/traces", "no token")
	now = now.Add(refusalLogEvery)
	r.add(ReasonBusy, "1.2.3.4:6", "POST /v1/traces", "full 5")
	want := "gymtrace: refused request from 1.2.3.4:5: busy: POST /v1/traces: full 0\n" +
		"gymtrace: refused request from 1.2.3.4:5: unauthenticated: POST /v1/traces: no token\n" +
		"gymtrace: refused request from 1.2.3.4:6: busy: POST /v1/traces: full 5 (5 refused for this reason since the last report)\n"
	if log.String() != want {
		t.Errorf("log:\n%s\nwant:\n%s", log.String(), want)
	}
	if got := FormatRefusals(r.snapshot()); got != "busy=6, unauthenticated=1" {
		t.Errorf("FormatRefusals = %q", got)
	}
}

// BenchmarkInflate measures each Content-Encoding's inflater on a
// telemetrygen request of 512 spans (MB/s of decompressed body).
func BenchmarkInflate(b *testing.B) {
	raw, err := os.ReadFile("testdata/req-telemetrygen-512.bin")
	if err != nil {
		b.Fatal(err)
	}
	for _, enc := range []string{"gzip", "zstd", "zlib", "snappy", "x-snappy-framed", "lz4"} {
		body := senderEncoders[enc](b, raw)
		b.Run(enc, func(b *testing.B) {
			var out bytes.Buffer
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				out.Reset()
				if err := httpEncodings[enc](body, &out, 64<<20); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
