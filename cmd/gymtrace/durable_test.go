package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/nemo-gym/gymtrace/model"
	"github.com/nemo-gym/gymtrace/receiver"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
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
	sb = &servedBinary{cmd: cmd, stdout: &syncBuffer{}, stderr: &syncBuffer{}, exited: make(chan error, 1)}
	cmd.Stdout = sb.stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
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

// retryPost posts body until it is answered 200, waiting as the answer's
// Retry-After says (as OTLP exporters do), for at most three minutes; it
// returns the refusals met. A connection cut while the body is sent (a
// refusal answered before the body was read) is retried too.
func retryPost(client *http.Client, url string, body []byte) (refusals int, err error) {
	deadline := time.Now().Add(3 * time.Minute)
	for {
		resp, err := client.Post(url, "application/x-protobuf", bytes.NewReader(body))
		if err != nil && time.Now().Before(deadline) && (errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET)) {
			refusals++
			time.Sleep(time.Second)
			continue
		}
		if err != nil {
			return refusals, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return refusals, nil
		}
		if resp.StatusCode != http.StatusServiceUnavailable && resp.StatusCode != http.StatusTooManyRequests || time.Now().After(deadline) {
			return refusals, fmt.Errorf("answered %d", resp.StatusCode)
		}
		refusals++
		wait, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
		time.Sleep(time.Duration(max(wait, 1)) * time.Second)
	}
}

// retryExport is retryPost over gRPC: Unavailable is retried after a
// second.
func retryExport(cc *grpc.ClientConn, req *coltrace.ExportTraceServiceRequest) (refusals int, err error) {
	deadline := time.Now().Add(3 * time.Minute)
	client := coltrace.NewTraceServiceClient(cc)
	for {
		_, err := client.Export(context.Background(), req)
		if err == nil {
			return refusals, nil
		}
		if status.Code(err) != codes.Unavailable || time.Now().After(deadline) {
			return refusals, err
		}
		refusals++
		time.Sleep(time.Second)
	}
}

// TestServeRecordMemoryBound sends 16 HTTP and 16 gRPC requests of 15 MB
// at once to serve --record --max-bytes 64MiB, each sender retrying when
// told to: every request is taken in the end, and the requests in flight,
// bounded in bytes inside --max-bytes, keep the peak resident set near the
// budget plus the fixed overhead the README states.
func TestServeRecordMemoryBound(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and drives the binary")
	}
	rec := filepath.Join(t.TempDir(), "rec.jsonl")
	sb, grpcAddr := startServeBoth(t, "--record", rec, "--max-bytes", "67108864") // 64 MiB, as older builds read it
	cc, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	// 15 MB: 7,300 spans with a 2 KB attribute.
	const perReq = 7300
	senders := 32
	if raceEnabled {
		senders = 8 // the senders' own encoding is slow under the detector
	}
	var refusals atomic.Int64
	var wg sync.WaitGroup
	client := &http.Client{Timeout: time.Minute}
	t0 := time.Now()
	for w := 0; w < senders; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			body := attrRequest(uint64(w)<<40+1, perReq, 2048)
			var n int
			var err error
			if w%2 == 0 {
				n, err = retryPost(client, sb.base+"/v1/traces", body)
			} else {
				var req coltrace.ExportTraceServiceRequest
				if err := proto.Unmarshal(body, &req); err != nil {
					t.Error(err)
					return
				}
				body = nil
				n, err = retryExport(cc, &req)
			}
			refusals.Add(int64(n))
			if err != nil {
				t.Errorf("sender %d: %v", w, err)
			}
		}(w)
	}
	wg.Wait()
	took := time.Since(t0)
	peak := peakRSS(t, sb.cmd.Process.Pid)
	sb.cmd.Process.Signal(os.Interrupt)
	sb.wait(t, 30*time.Second)
	got, _ := reopenedIDs(t, rec)
	t.Logf("peak RSS %d MiB: %d requests of 15 MB (half HTTP, half gRPC) taken in %v after %d retryable refusals, with --record --max-bytes 64MiB; %d spans recorded",
		peak>>20, senders, took.Round(time.Second), refusals.Load(), len(got))
	if len(got) != senders*perReq {
		t.Errorf("record holds %d spans, want all %d", len(got), senders*perReq)
	}
	if peak > maxRecordRSS {
		t.Errorf("peak RSS %d MiB, want under %d MiB", peak>>20, maxRecordRSS>>20)
	}
}

// maxRecordRSS bounds TestServeRecordMemoryBound's peak: --max-bytes
// (64 MiB) plus one 15 MB request handled alone (about 3x its size: body,
// spans, record line), plus the runtime and the Go heap's headroom. It
// measures 270-290 MiB with the race detector's 8 senders and 340-370 MiB
// with 32; before the requests in flight were bounded in bytes it was
// 2.3 GB (1.4 GB without --record).
const maxRecordRSS = 400 << 20

// stallConn passes the first n bytes written, then blocks every write until
// closed: a sender stalled mid-request.
type stallConn struct {
	net.Conn
	mu     sync.Mutex
	left   int
	closed chan struct{}
}

func (c *stallConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	if c.left >= len(p) {
		c.left -= len(p)
		c.mu.Unlock()
		return c.Conn.Write(p)
	}
	k := c.left
	c.left = 0
	c.mu.Unlock()
	if k > 0 {
		if _, err := c.Conn.Write(p[:k]); err != nil {
			return 0, err
		}
	}
	<-c.closed
	return k, net.ErrClosed
}

func (c *stallConn) Close() error {
	select {
	case <-c.closed:
	default:
		close(c.closed)
	}
	return c.Conn.Close()
}

// TestServeStopWithStalledClients stops serve --record while clients are
// stalled mid-request, over HTTP (a body declared and not sent) and gRPC (a
// message cut off by the sender's connection): the stop ends within 2 s,
// the stalled requests are cut off and counted, and what was acknowledged
// before is in the record.
func TestServeStopWithStalledClients(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and drives the binary")
	}
	rec := filepath.Join(t.TempDir(), "rec.jsonl")
	sb, grpcAddr := startServeBoth(t, "--record", rec, "--json")
	httpAddr := strings.TrimPrefix(sb.base, "http://")
	var a acked
	for k := 0; k < 5; k++ {
		resp, err := http.Post(sb.base+"/v1/traces", "application/x-protobuf", bytes.NewReader(attrRequest(uint64(k*10+1), 10, 100)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			for i := 0; i < 10; i++ {
				a.add(uint64(k*10 + 1 + i))
			}
		}
	}
	const httpStalled, grpcStalled = 5, 2
	for i := 0; i < httpStalled; i++ {
		c, err := net.Dial("tcp", httpAddr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST /v1/traces HTTP/1.1\r\nHost: %s\r\nContent-Type: application/x-protobuf\r\nContent-Length: 1000000\r\n\r\n%s", httpAddr, strings.Repeat("\x0a", 100))
	}
	var conns []*stallConn
	var mu sync.Mutex
	for i := 0; i < grpcStalled; i++ {
		cc, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
				c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
				if err != nil {
					return nil, err
				}
				// The preface, settings and headers pass, and part of
				// the message.
				sc := &stallConn{Conn: c, left: 64 << 10, closed: make(chan struct{})}
				mu.Lock()
				conns = append(conns, sc)
				mu.Unlock()
				return sc, nil
			}))
		if err != nil {
			t.Fatal(err)
		}
		defer cc.Close()
		var req coltrace.ExportTraceServiceRequest
		proto.Unmarshal(attrRequest(uint64(1000+i*1000), 500, 2048), &req)
		go coltrace.NewTraceServiceClient(cc).Export(context.Background(), &req)
	}
	time.Sleep(500 * time.Millisecond) // the stalled requests reach their handlers
	t0 := time.Now()
	sb.cmd.Process.Signal(syscall.SIGTERM)
	sb.wait(t, 10*time.Second)
	took := time.Since(t0)
	mu.Lock()
	for _, c := range conns {
		c.Close()
	}
	mu.Unlock()
	if took > 2500*time.Millisecond {
		t.Errorf("stop took %v with stalled clients, want about 2 s at most", took)
	}
	var sum struct {
		CutOff          int64            `json:"requests_cut_off"`
		RequestsRefused map[string]int64 `json:"requests_refused"`
	}
	if err := json.Unmarshal([]byte(sb.stdout.String()), &sum); err != nil {
		t.Fatalf("summary: %v\n%s\n%s", err, sb.stdout.String(), sb.stderr.String())
	}
	if sum.CutOff != httpStalled+grpcStalled || sum.RequestsRefused["cut_off_at_stop"] != httpStalled+grpcStalled {
		t.Errorf("summary: %d cut off, requests refused %v; want %d stalled requests cut off and counted", sum.CutOff, sum.RequestsRefused, httpStalled+grpcStalled)
	}
	got, _ := reopenedIDs(t, rec)
	for id := range a.ids {
		if !got[id] {
			t.Errorf("acknowledged span %d missing from the record", id)
		}
	}
	t.Logf("stopped in %v with %d stalled HTTP bodies and %d stalled gRPC messages: %d cut off", took.Round(time.Millisecond), httpStalled, grpcStalled, sum.CutOff)
}

// setFileSizeLimit sets the soft RLIMIT_FSIZE of process pid (one of this
// user's: no privilege needed): its writes past n bytes fail with EFBIG,
// as writes to a full disk fail with ENOSPC.
func setFileSizeLimit(t *testing.T, pid int, n uint64) {
	t.Helper()
	var old syscall.Rlimit
	if _, _, e := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(pid), syscall.RLIMIT_FSIZE, 0, uintptr(unsafe.Pointer(&old)), 0, 0); e != 0 {
		t.Skipf("prlimit: %v", e)
	}
	lim := syscall.Rlimit{Cur: n, Max: old.Max}
	if _, _, e := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(pid), syscall.RLIMIT_FSIZE, uintptr(unsafe.Pointer(&lim)), 0, 0, 0); e != 0 {
		t.Skipf("prlimit: %v", e)
	}
}

// TestServeRecordDiskFullThenFreed limits the file size serve --record may
// write (a full disk, without privileges) while a sender keeps sending,
// then lifts the limit: while full, requests are refused as retryable and
// serve says so at once and on every status line; once room returns,
// recording resumes by itself; the summary's counts are what the sender
// saw, and the record holds exactly the acknowledged spans.
func TestServeRecordDiskFullThenFreed(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and drives the binary")
	}
	rec := filepath.Join(t.TempDir(), "rec.jsonl")
	sb := startServeBinary(t, "--record", rec, "--json")
	pid := sb.cmd.Process.Pid
	setFileSizeLimit(t, pid, 256<<10)
	const per = 50
	var a acked
	refused := 0
	next := uint64(1)
	send := func() int {
		body := attrRequest(next, per, 100)
		resp, err := http.Post(sb.base+"/v1/traces", "application/x-protobuf", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusOK:
			for i := uint64(0); i < per; i++ {
				a.add(next + i)
			}
		case http.StatusServiceUnavailable:
			refused += per
		default:
			t.Fatalf("answered %d", resp.StatusCode)
		}
		next += per
		return resp.StatusCode
	}
	for i := 0; i < 1000 && send() == http.StatusOK; i++ {
	}
	if refused == 0 {
		t.Fatal("the record never filled")
	}
	// Refused for as long as it lasts, and said on the status line.
	for t0 := time.Now(); time.Since(t0) < 1500*time.Millisecond; time.Sleep(100 * time.Millisecond) {
		send()
	}
	out := sb.stderr.String()
	if !strings.Contains(out, "gymtrace: record failing: file too large; requests are refused as retryable") ||
		!regexp.MustCompile(`record_refused=\d+ record_failures=\d+ record_error="file too large" record_failing=true`).MatchString(out) {
		t.Errorf("a full record is not shown at once and on the status line:\n%s", out)
	}
	setFileSizeLimit(t, pid, math.MaxUint64) // RLIM_INFINITY
	resumed := false
	for t0 := time.Now(); time.Since(t0) < 5*time.Second && !resumed; time.Sleep(100 * time.Millisecond) {
		resumed = send() == http.StatusOK
	}
	if !resumed {
		t.Fatalf("recording did not resume once room returned:\n%s", sb.stderr.String())
	}
	for i := 0; i < 5; i++ {
		if send() != http.StatusOK {
			t.Fatal("refused after resuming")
		}
	}
	sb.cmd.Process.Signal(syscall.SIGTERM)
	sb.wait(t, 10*time.Second)
	if !strings.Contains(sb.stderr.String(), "gymtrace: record resumed after") {
		t.Errorf("resuming is not said:\n%s", sb.stderr.String())
	}
	var sum struct {
		SpansReceived  int64  `json:"spans_received"`
		SpansRecorded  int64  `json:"spans_recorded"`
		RecordRefused  int64  `json:"record_refused_spans"`
		RecordFailures int64  `json:"record_failures"`
		RecordFailing  bool   `json:"record_failing"`
		RecordError    string `json:"record_error"`
	}
	if err := json.Unmarshal([]byte(sb.stdout.String()), &sum); err != nil {
		t.Fatalf("summary: %v\n%s", err, sb.stdout.String())
	}
	n := int64(a.len())
	if sum.SpansReceived != n || sum.SpansRecorded != n || sum.RecordRefused != int64(refused) || sum.RecordFailures == 0 || sum.RecordFailing ||
		!strings.Contains(sum.RecordError, "file too large") {
		t.Errorf("summary %+v; sender saw %d acknowledged, %d refused", sum, n, refused)
	}
	got, cut := reopenedIDs(t, rec)
	if cut {
		t.Error("the record ends with a cut line: a failed write must be cut off again")
	}
	missing, extra := 0, 0
	for id := range a.ids {
		if !got[id] {
			missing++
		}
	}
	for id := range got {
		if !a.ids[id] {
			extra++
		}
	}
	if missing > 0 || extra > 0 {
		t.Errorf("record: %d acknowledged spans missing, %d not acknowledged present", missing, extra)
	}
	t.Logf("%d spans acknowledged, %d refused while full; %d failed writes", n, refused, sum.RecordFailures)
}

// TestDemoRecordDiskFull: demo --headless runs serve's loop, so a record
// that cannot be written is said at once there too.
func TestDemoRecordDiskFull(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and drives the binary")
	}
	rec := filepath.Join(t.TempDir(), "rec.jsonl")
	cmd := exec.Command(gymtraceBinary(t), "demo", "--headless", "--record", rec, "--rate", "0", "--concurrency", "4",
		"--grpc-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	setFileSizeLimit(t, cmd.Process.Pid, 64<<10)
	const want = "gymtrace: record failing: file too large; requests are refused as retryable"
	for t0 := time.Now(); time.Since(t0) < 20*time.Second && !strings.Contains(stderr.String(), want); time.Sleep(100 * time.Millisecond) {
	}
	if !strings.Contains(stderr.String(), want) {
		t.Errorf("demo does not say its record is failing:\n%s", stderr.String())
	}
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
}
