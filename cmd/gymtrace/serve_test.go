package main

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nemo-gym/gymtrace/internal/golden"
	"github.com/nemo-gym/gymtrace/model"
	"github.com/nemo-gym/gymtrace/receiver"
)

// syncBuffer is a bytes.Buffer safe for the status-line writer and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func fixtureLines(t *testing.T, name string) [][]byte {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "captures", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		lines = append(lines, append([]byte(nil), sc.Bytes()...))
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}

func post(t *testing.T, url, contentType string, body []byte) {
	t.Helper()
	resp, err := http.Post(url, contentType, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("POST %s: %s", url, resp.Status)
	}
}

// TestServeHeadlessJSON runs serve --headless --json on loopback, sends the
// OTLP/JSON fixture plus a metrics and a logs request, stops it as SIGINT
// would, and checks the summary against its golden file and the --record
// file against what was sent.
func TestServeHeadlessJSON(t *testing.T) {
	lines := fixtureLines(t, "all.otlp.jsonl")
	tests := []struct {
		name  string
		extra []string
		sends int // how many times the fixture is sent: duplicates are counted, not stored
	}{
		{name: "fixture_once", sends: 1},
		{name: "fixture_twice_bounded", extra: []string{"--max-spans", "200"}, sends: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := filepath.Join(t.TempDir(), "rec.jsonl")
			args := append([]string{"--headless", "--json", "--grpc-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", "--record", rec, "--spec", "all"}, tt.extra...)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var stdout, stderr syncBuffer
			addr := make(chan string, 1)
			done := make(chan int, 1)
			go func() {
				done <- runServe(ctx, args, &stdout, &stderr, false, func(r *runningReceivers) { addr <- r.HTTPAddr })
			}()
			var base string
			select {
			case a := <-addr:
				base = "http://" + a
			case code := <-done:
				t.Fatalf("serve exited %d before listening: %s", code, stderr.String())
			}
			for i := 0; i < tt.sends; i++ {
				for _, l := range lines {
					post(t, base+"/v1/traces", "application/json", l)
				}
			}
			post(t, base+"/v1/metrics", "application/json", []byte(`{"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"name":"gym.concurrency.queue_wait_duration_ms","gauge":{"dataPoints":[{"asDouble":1},{"asDouble":2}]}}]}]}]}`))
			post(t, base+"/v1/logs", "application/json", []byte(`{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"body":{"stringValue":"hi"}}]}]}]}`))
			cancel()
			select {
			case code := <-done:
				if code != exitOK {
					t.Fatalf("serve exited %d: %s", code, stderr.String())
				}
			case <-time.After(30 * time.Second):
				t.Fatal("serve did not stop")
			}
			golden.Check(t, []byte(stdout.String()))
			if !strings.Contains(stderr.String(), "gymtrace: receiving OTLP on grpc 127.0.0.1:") {
				t.Errorf("stderr lacks the listening line:\n%s", stderr.String())
			}
			// The record holds every acknowledged request by the time the
			// summary is printed: reload it and count.
			st := model.NewStore(model.Options{})
			defer st.Close()
			rep, err := receiver.ReadFiles(st, []string{rec}, receiver.ReadOptions{})
			if err != nil || rep.BadLines != 0 {
				t.Fatalf("read record: %v, %d bad lines %v", err, rep.BadLines, rep.BadSamples)
			}
			if want := 341 * tt.sends; rep.Spans != want {
				t.Errorf("record holds %d spans, want %d", rep.Spans, want)
			}
		})
	}
}

func TestServeRefusesExposedAddressWithoutToken(t *testing.T) {
	t.Setenv(envAuthToken, "")
	var stdout, stderr syncBuffer
	code := runServe(context.Background(), []string{"--headless", "--http-addr", "0.0.0.0:0", "--grpc-addr", "off"}, &stdout, &stderr, false, nil)
	if code != exitUsage {
		t.Fatalf("exit %d, want %d", code, exitUsage)
	}
	want := "gymtrace serve: refusing to listen beyond loopback without a token: 0.0.0.0:0 is not a loopback address; set --auth-token (or GYMTRACE_AUTH_TOKEN), or pass --insecure\n"
	if stderr.String() != want {
		t.Errorf("stderr = %q, want %q", stderr.String(), want)
	}
}

func TestServeBadSpec(t *testing.T) {
	var stdout, stderr syncBuffer
	// G1 refuses an unknown name: there is no telemetry to receive.
	code := runServe(context.Background(), []string{"--headless", "--gym-version", "G1", "--spec", "defualt"}, &stdout, &stderr, false, nil)
	if code != exitUsage || !strings.Contains(stderr.String(), `span_groups "defualt" from --spec: Gym refuses this spec`) {
		t.Fatalf("exit %d, stderr %q; want exit 2 naming the spec source", code, stderr.String())
	}
}
