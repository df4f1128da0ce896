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

// gymtraceBinary builds the real binary once per test run.
func gymtraceBinary(t *testing.T) string {
	t.Helper()
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
	cmd    *exec.Cmd
	base   string // http://host:port
	stderr *syncBuffer
	exited chan error
}

func startServeBinary(t *testing.T, args ...string) *servedBinary {
	t.Helper()
	cmd := exec.Command(gymtraceBinary(t), append([]string{"serve", "--headless", "--grpc-addr", "off", "--http-addr", "127.0.0.1:0"}, args...)...)
	pr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sb := &servedBinary{cmd: cmd, stderr: &syncBuffer{}, exited: make(chan error, 1)}
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

// TestServeStuckRecordWriter records into a FIFO nobody reads: the writer
// blocks for good. SIGTERM starts the stop; a second SIGTERM must end the
// process, saying what was not written.
func TestServeStuckRecordWriter(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and drives the binary")
	}
	fifo := filepath.Join(t.TempDir(), "rec.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	sb := startServeBinary(t, "--record", fifo)
	// Enough to fill the pipe (64 KiB) and the writer's buffer.
	body := floodRequest(1, 200)
	for i := 0; i < 60; i++ {
		resp, err := http.Post(sb.base+"/v1/traces", "application/x-protobuf", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	sb.cmd.Process.Signal(syscall.SIGTERM)
	time.Sleep(1500 * time.Millisecond)
	select {
	case err := <-sb.exited:
		t.Fatalf("serve exited (%v) while its record writer was blocked: %s", err, sb.stderr.String())
	default:
	}
	// The wait is explained while it lasts, not only at the end.
	if out := sb.stderr.String(); !strings.Contains(out, "acknowledged spans still to be written to the record; signal again to exit now") {
		t.Errorf("a stop held by the record writer does not say so:\n%s", out)
	}
	sb.cmd.Process.Signal(syscall.SIGTERM)
	sb.wait(t, 10*time.Second)
	if out := sb.stderr.String(); !strings.Contains(out, "not written to the record") {
		t.Errorf("exit message does not say what was not written:\n%s", out)
	}
}

var _ = context.Background
