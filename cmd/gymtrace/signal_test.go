package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nemo-gym/gymtrace/model"
	"github.com/nemo-gym/gymtrace/receiver"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// gymtraceBinary builds the real binary once per test run, or returns
// $GYMTRACE_TEST_BIN: BENCHMARKS.md runs these tests against an older build
// to compare.
func gymtraceBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("GYMTRACE_TEST_BIN"); p != "" {
		return p
	}
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "gymtrace-bin")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "gymtrace")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// servedBinary is a running gymtrace serve --headless.
type servedBinary struct {
	cmd            *exec.Cmd
	base           string // http://host:port
	stdout, stderr *syncBuffer
	exited         chan error
}

func startServeBinary(t *testing.T, args ...string) *servedBinary {
	t.Helper()
	cmd := exec.Command(gymtraceBinary(t), append([]string{"serve", "--headless", "--grpc-addr", "off", "--http-addr", "127.0.0.1:0"}, args...)...)
	pr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	sb := &servedBinary{cmd: cmd, stdout: &syncBuffer{}, stderr: &syncBuffer{}, exited: make(chan error, 1)}
	cmd.Stdout = sb.stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
		}
	})
	addr := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`http (127\.0\.0\.1:\d+)`)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			fmt.Fprintln(sb.stderr, sc.Text())
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
		sb.exited <- cmd.Wait()
	}()
	select {
	case a := <-addr:
		sb.base = "http://" + a
	case <-time.After(20 * time.Second):
		t.Fatalf("serve did not start: %s", sb.stderr.String())
	}
	return sb
}

func (sb *servedBinary) wait(t *testing.T, within time.Duration) error {
	t.Helper()
	select {
	case err := <-sb.exited:
		return err
	case <-time.After(within):
		t.Fatalf("serve did not exit within %s: %s", within, sb.stderr.String())
		return nil
	}
}

// floodRequest is n spans of their own trace, numbered from first.
func floodRequest(first uint64, n int) []byte {
	req := &coltrace.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{ScopeSpans: []*tracepb.ScopeSpans{{}}}}}
	ss := req.ResourceSpans[0].ScopeSpans[0]
	for i := 0; i < n; i++ {
		id := first + uint64(i)
		tid := make([]byte, 16)
		sid := make([]byte, 8)
		binary.BigEndian.PutUint64(tid[8:], id)
		binary.BigEndian.PutUint64(sid, id)
		ss.Spans = append(ss.Spans, &tracepb.Span{TraceId: tid, SpanId: sid, Name: "flood", StartTimeUnixNano: 1, EndTimeUnixNano: 2})
	}
	b, _ := proto.Marshal(req)
	return b
}

// flood posts requests of batch spans from workers goroutines until stop
// closes or the server stops answering, and returns the span numbers
// acknowledged with 200.
func flood(base string, workers, batch int, stop <-chan struct{}) map[uint64]bool {
	var mu sync.Mutex
	acked := map[uint64]bool{}
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 5 * time.Second}
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for k := uint64(0); ; k++ {
				select {
				case <-stop:
					return
				default:
				}
				first := uint64(w)<<40 | k*uint64(batch) + 1
				resp, err := client.Post(base+"/v1/traces", "application/x-protobuf", bytes.NewReader(floodRequest(first, batch)))
				if err != nil {
					return // the server is gone
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					mu.Lock()
					for i := 0; i < batch; i++ {
						acked[first+uint64(i)] = true
					}
					mu.Unlock()
				}
			}
		}(w)
	}
	wg.Wait()
	return acked
}

// recordedIDs reads a record file back into a store and returns the span
// numbers it holds.
func recordedIDs(t *testing.T, path string) map[uint64]bool {
	t.Helper()
	st := model.NewStore(model.Options{})
	defer st.Close()
	rep, err := receiver.ReadFiles(st, []string{path}, receiver.ReadOptions{})
	if err != nil || rep.BadLines != 0 {
		t.Fatalf("read record: %v, %d bad lines %v", err, rep.BadLines, rep.BadSamples)
	}
	st.Sync()
	got := map[uint64]bool{}
	for _, r := range st.Snapshot().Rollouts {
		for _, f := range r.Fragments {
			for _, sp := range f.Spans {
				got[binary.BigEndian.Uint64(sp.SpanID[:])] = true
			}
		}
	}
	return got
}

// TestServeSIGHUPKeepsAcknowledged closes the "terminal" of a real serve
// process during a flood: every span acknowledged with 200 must be in the
// record when it exits.
func TestServeSIGHUPKeepsAcknowledged(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and drives the binary")
	}
	rec := filepath.Join(t.TempDir(), "rec.jsonl")
	sb := startServeBinary(t, "--record", rec)
	stop := make(chan struct{})
	res := make(chan map[uint64]bool, 1)
	go func() { res <- flood(sb.base, 4, 50, stop) }()
	time.Sleep(700 * time.Millisecond)
	if err := sb.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	err := sb.wait(t, 30*time.Second)
	close(stop)
	acked := <-res
	if err != nil {
		t.Fatalf("serve exited with %v after SIGHUP: %s", err, sb.stderr.String())
	}
	if len(acked) < 500 {
		t.Fatalf("only %d spans acknowledged before SIGHUP; the flood did not run", len(acked))
	}
	got := recordedIDs(t, rec)
	missing := 0
	for id := range acked {
		if !got[id] {
			missing++
		}
	}
	if missing > 0 {
		t.Fatalf("%d of %d acknowledged spans missing from the record", missing, len(acked))
	}
	t.Logf("%d acknowledged spans, all recorded", len(acked))
}

// TestServeRecordFIFONobodyReads records into a FIFO nobody reads: the
// pipe takes the first requests, then the writer blocks for good. Requests
// it did not write are refused (429, retry) instead of acknowledged, the
// counts in the summary are exactly what the senders saw, and a stop ends
// within 2 s, naming what the blocked writer holds.
func TestServeRecordFIFONobodyReads(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and drives the binary")
	}
	fifo := filepath.Join(t.TempDir(), "rec.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	sb := startServeBinary(t, "--record", fifo, "--json")
	// 200 spans are about 30 KB of record: the pipe (64 KiB) takes two
	// requests, then the writer blocks.
	const reqs, per = 12, 200
	codes := make([]int, reqs)
	var wg sync.WaitGroup
	for i := range codes {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			resp, err := http.Post(sb.base+"/v1/traces", "application/x-protobuf", bytes.NewReader(floodRequest(uint64(i*per+1), per)))
			if err != nil {
				t.Errorf("request %d: %v", i, err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			codes[i] = resp.StatusCode
			if resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") == "" {
				t.Errorf("request %d: 429 without Retry-After", i)
			}
		}(i)
		// In order, so the first ones reach the writer first.
		time.Sleep(20 * time.Millisecond)
	}
	wg.Wait()
	var acked, refused int
	for i, c := range codes {
		switch c {
		case http.StatusOK:
			acked++
		case http.StatusTooManyRequests:
			refused++
		default:
			t.Errorf("request %d answered %d, want 200 (written) or 429 (the writer is stalled)", i, c)
		}
	}
	if acked == 0 || refused == 0 {
		t.Fatalf("%d acknowledged, %d refused: want both (the pipe takes some, then blocks)", acked, refused)
	}
	t0 := time.Now()
	sb.cmd.Process.Signal(syscall.SIGTERM)
	sb.wait(t, 10*time.Second)
	if d := time.Since(t0); d > 2500*time.Millisecond {
		t.Errorf("stop took %v with a blocked record writer, want about 2 s at most", d)
	}
	var sum struct {
		SpansReceived   int64            `json:"spans_received"`
		SpansRecorded   int64            `json:"spans_recorded"`
		RecordRefused   int64            `json:"record_refused_spans"`
		NotRecorded     int64            `json:"spans_not_recorded"`
		RequestsRefused map[string]int64 `json:"requests_refused"`
	}
	if err := json.Unmarshal([]byte(sb.stdout.String()), &sum); err != nil {
		t.Fatalf("summary: %v\n%s\n%s", err, sb.stdout.String(), sb.stderr.String())
	}
	if sum.SpansReceived != int64(acked*per) || sum.SpansRecorded != int64(acked*per) || sum.NotRecorded != 0 {
		t.Errorf("summary: %d received, %d recorded, %d not recorded; senders saw %d acknowledged", sum.SpansReceived, sum.SpansRecorded, sum.NotRecorded, acked*per)
	}
	if sum.RecordRefused != int64(refused*per) || sum.RequestsRefused["record_stalled"] != int64(refused) {
		t.Errorf("summary: %d spans refused by the record, requests refused %v; senders saw %d requests (%d spans) refused",
			sum.RecordRefused, sum.RequestsRefused, refused, refused*per)
	}
	m := regexp.MustCompile(`record writer blocked: (\d+) spans \((\d+) requests\) not written; none was acknowledged`).FindStringSubmatch(sb.stderr.String())
	if m == nil {
		t.Fatalf("the stop does not say what the blocked writer held:\n%s", sb.stderr.String())
	}
	if n, _ := strconv.Atoi(m[1]); n == 0 || n > refused*per || n%per != 0 {
		t.Errorf("the blocked writer held %s spans; want whole requests among the %d refused", m[1], refused)
	}
	t.Logf("%d requests acknowledged, %d refused; stopped in %v: %s", acked, refused, time.Since(t0).Round(time.Millisecond), m[0])
}

var _ = context.Background
