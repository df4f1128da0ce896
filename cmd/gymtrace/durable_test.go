package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nemo-gym/gymtrace/model"
	"github.com/nemo-gym/gymtrace/receiver"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// startServeBoth starts the real binary headless with both transports on
// free loopback ports.
func startServeBoth(t *testing.T, args ...string) (sb *servedBinary, grpcAddr string) {
	t.Helper()
	cmd := exec.Command(gymtraceBinary(t), append([]string{"serve", "--headless", "--grpc-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0"}, args...)...)
	pr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sb = &servedBinary{cmd: cmd, stderr: &syncBuffer{}, exited: make(chan error, 1)}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
		}
	})
	addrs := make(chan [2]string, 1)
	go func() {
		re := regexp.MustCompile(`grpc (127\.0\.0\.1:\d+), http (127\.0\.0\.1:\d+)`)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			fmt.Fprintln(sb.stderr, sc.Text())
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case addrs <- [2]string{m[1], m[2]}:
				default:
				}
			}
		}
		sb.exited <- cmd.Wait()
	}()
	select {
	case a := <-addrs:
		sb.base = "http://" + a[1]
		return sb, a[0]
	case <-time.After(20 * time.Second):
		t.Fatalf("serve did not start: %s", sb.stderr.String())
	}
	return nil, ""
}

// acked is the set of span numbers (the span id read as a big-endian
// uint64) that senders saw acknowledged.
type acked struct {
	mu  sync.Mutex
	ids map[uint64]bool
}

func (a *acked) add(ids ...uint64) {
	a.mu.Lock()
	if a.ids == nil {
		a.ids = map[uint64]bool{}
	}
	for _, id := range ids {
		a.ids[id] = true
	}
	a.mu.Unlock()
}

func (a *acked) len() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.ids)
}

// ackExporter passes spans to a real OTLP exporter and notes the ones the
// receiver acknowledged: ExportSpans returns nil only once the receiver
// answered OK (after any retries).
type ackExporter struct {
	sdktrace.SpanExporter
	acked *acked
}

func (e ackExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := e.SpanExporter.ExportSpans(ctx, spans)
	if err == nil {
		ids := make([]uint64, len(spans))
		for i, sp := range spans {
			sid := sp.SpanContext().SpanID()
			ids[i] = binary.BigEndian.Uint64(sid[:])
		}
		e.acked.add(ids...)
	}
	return err
}

// sdkSender ends spans with a 2 KB attribute as fast as the SDK's batcher
// takes them, exporting over grpc or HTTP, until stop closes.
func sdkSender(t *testing.T, grpcAddr, httpAddr string, useGRPC bool, a *acked, stop <-chan struct{}) {
	ctx := context.Background()
	var (
		exp sdktrace.SpanExporter
		err error
	)
	if useGRPC {
		exp, err = otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(grpcAddr), otlptracegrpc.WithInsecure(),
			otlptracegrpc.WithRetry(otlptracegrpc.RetryConfig{Enabled: true, InitialInterval: 10 * time.Millisecond, MaxInterval: 200 * time.Millisecond, MaxElapsedTime: time.Minute}))
	} else {
		exp, err = otlptracehttp.New(ctx, otlptracehttp.WithEndpoint(httpAddr), otlptracehttp.WithInsecure(),
			otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: true, InitialInterval: 10 * time.Millisecond, MaxInterval: 200 * time.Millisecond, MaxElapsedTime: time.Minute}))
	}
	if err != nil {
		t.Error(err)
		return
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(ackExporter{exp, a},
		sdktrace.WithMaxExportBatchSize(100), sdktrace.WithBatchTimeout(20*time.Millisecond), sdktrace.WithMaxQueueSize(2000),
		sdktrace.WithExportTimeout(5*time.Second)))
	tr := tp.Tracer("durable")
	blob := strings.Repeat("x", 2048)
	for {
		select {
		case <-stop:
			sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			tp.Shutdown(sctx) // the receiver is gone: what is left fails
			cancel()
			return
		default:
		}
		for i := 0; i < 100; i++ {
			_, sp := tr.Start(ctx, "op")
			sp.SetAttributes(attribute.String("blob", blob))
			sp.End()
		}
		time.Sleep(time.Millisecond)
	}
}

// attrRequest is n spans of their own trace, numbered from first, each with
// an attribute of attrLen bytes.
func attrRequest(first uint64, n, attrLen int) []byte {
	req := &coltrace.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{ScopeSpans: []*tracepb.ScopeSpans{{}}}}}
	ss := req.ResourceSpans[0].ScopeSpans[0]
	blob := strings.Repeat("y", attrLen)
	for i := 0; i < n; i++ {
		id := first + uint64(i)
		tid := make([]byte, 16)
		sid := make([]byte, 8)
		binary.BigEndian.PutUint64(tid[8:], id)
		binary.BigEndian.PutUint64(sid, id)
		ss.Spans = append(ss.Spans, &tracepb.Span{TraceId: tid, SpanId: sid, Name: "flood", StartTimeUnixNano: 1, EndTimeUnixNano: 2,
			Attributes: []*commonpb.KeyValue{{Key: "blob", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: blob}}}}})
	}
	b, _ := proto.Marshal(req)
	return b
}

// rawSender posts requests of batch spans with a 2 KB attribute until stop
// closes or the server is gone, noting what was answered 200.
func rawSender(base string, w, batch int, a *acked, stop <-chan struct{}) {
	client := &http.Client{Timeout: 10 * time.Second}
	for k := uint64(0); ; k++ {
		select {
		case <-stop:
			return
		default:
		}
		first := uint64(w+1)<<48 | k*uint64(batch) + 1
		resp, err := client.Post(base+"/v1/traces", "application/x-protobuf", bytes.NewReader(attrRequest(first, batch, 2048)))
		if err != nil {
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			ids := make([]uint64, batch)
			for i := range ids {
				ids[i] = first + uint64(i)
			}
			a.add(ids...)
		} else {
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// reopenedIDs reads a record written by a killed process back and returns
// the span numbers it holds. A kill can cut the last line short (it was
// never acknowledged); any other bad line fails the test.
func reopenedIDs(t *testing.T, path string) (ids map[uint64]bool, cut bool) {
	t.Helper()
	st := model.NewStore(model.Options{})
	defer st.Close()
	rep, err := receiver.ReadFiles(st, []string{path}, receiver.ReadOptions{})
	if err != nil {
		t.Fatalf("read record: %v", err)
	}
	for _, b := range rep.BadSamples {
		if !strings.Contains(b.Reason, "truncated last line") {
			t.Errorf("bad line in the record: %s", b)
		}
	}
	if rep.BadLines > 1 {
		t.Errorf("%d bad lines in the record; a kill can cut at most the last", rep.BadLines)
	}
	st.Sync()
	ids = map[uint64]bool{}
	for _, r := range st.Snapshot().Rollouts {
		for _, f := range r.Fragments {
			for _, sp := range f.Spans {
				ids[binary.BigEndian.Uint64(sp.SpanID[:])] = true
			}
		}
	}
	return ids, rep.BadLines == 1
}

// TestServeSIGKILLKeepsAcknowledged kills serve --record with SIGKILL while
// real OTLP exporters (gRPC and HTTP) and raw HTTP senders send spans with a
// 2 KB attribute: every span a sender saw acknowledged must be in the
// record when it is reopened.
func TestServeSIGKILLKeepsAcknowledged(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and drives the binary")
	}
	for _, fsync := range []bool{false, true} {
		t.Run(fmt.Sprintf("fsync=%v", fsync), func(t *testing.T) {
			dir := t.TempDir()
			if d := os.Getenv("GYMTRACE_RECORD_DIR"); d != "" {
				dir = d // BENCHMARKS.md: a RAM disk
			}
			rec := filepath.Join(dir, fmt.Sprintf("kill-%d.jsonl", time.Now().UnixNano()))
			defer os.Remove(rec)
			args := []string{"--record", rec}
			if p := os.Getenv("GYMTRACE_CPUPROFILE"); p != "" {
				args = append(args, "--cpuprofile", p)
			}
			if fsync {
				args = append(args, "--fsync")
			}
			sb, grpcAddr := startServeBoth(t, args...)
			httpAddr := strings.TrimPrefix(sb.base, "http://")
			var a acked
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for i := 0; i < 4; i++ {
				wg.Add(2)
				go func(i int) { defer wg.Done(); sdkSender(t, grpcAddr, httpAddr, i%2 == 0, &a, stop) }(i)
				go func(i int) { defer wg.Done(); rawSender(sb.base, i, 100, &a, stop) }(i)
			}
			time.Sleep(3 * time.Second)
			if err := sb.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatalf("%v: %s", err, sb.stderr.String())
			}
			sb.wait(t, 10*time.Second)
			close(stop)
			wg.Wait()
			n := a.len()
			if n < 1000 {
				t.Fatalf("only %d spans acknowledged in 3 s; the senders did not run: %s", n, sb.stderr.String())
			}
			got, cut := reopenedIDs(t, rec)
			missing := 0
			for id := range a.ids {
				if !got[id] {
					missing++
				}
			}
			t.Logf("SIGKILL after 3 s: %d spans acknowledged, %d in the record (last line cut: %v), %d acknowledged missing", n, len(got), cut, missing)
			if missing > 0 {
				t.Errorf("%d of %d acknowledged spans missing from the record (%.1f%%)", missing, n, 100*float64(missing)/float64(n))
			}
		})
	}
}

// TestServeRecordMemoryBound sends 32 concurrent 15 MB requests to serve
// --record --max-bytes 64MiB: the record queue is bounded in bytes, so the
// peak resident set stays near the budget plus the fixed overhead the
// README states.
func TestServeRecordMemoryBound(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and drives the binary")
	}
	rec := filepath.Join(t.TempDir(), "rec.jsonl")
	sb := startServeBinary(t, "--record", rec, "--max-bytes", "67108864")
	// 15 MB: 7,300 spans with a 2 KB attribute.
	const perReq = 7300
	var sent, ok atomic.Int64
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 60 * time.Second}
	for w := 0; w < 32; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for k := 0; k < 2; k++ {
				body := attrRequest(uint64(w)<<40|uint64(k)<<32, perReq, 2048)
				resp, err := client.Post(sb.base+"/v1/traces", "application/x-protobuf", bytes.NewReader(body))
				if err != nil {
					t.Errorf("sender %d: %v", w, err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				sent.Add(1)
				if resp.StatusCode == http.StatusOK {
					ok.Add(1)
				}
			}
		}(w)
	}
	wg.Wait()
	peak := peakRSS(t, sb.cmd.Process.Pid)
	t.Logf("peak RSS %d MiB after %d requests of 15 MB (%d acknowledged) with --record --max-bytes 64MiB", peak>>20, sent.Load(), ok.Load())
	sb.cmd.Process.Signal(os.Interrupt)
	sb.wait(t, 30*time.Second)
	if peak > maxRecordRSS {
		t.Errorf("peak RSS %d MiB, want under %d MiB", peak>>20, maxRecordRSS>>20)
	}
}

// maxRecordRSS bounds TestServeRecordMemoryBound's peak.
const maxRecordRSS = 1 << 30
