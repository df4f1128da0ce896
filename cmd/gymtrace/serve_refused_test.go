package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestServeCountsRefusals sends requests serve cannot take (an unsupported
// encoding, a wrong content type) beside good ones and checks the refusals
// reach the status line, the summary's requests_refused and, once per
// reason, stderr.
func TestServeCountsRefusals(t *testing.T) {
	lines := fixtureLines(t, "all.otlp.jsonl")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	addr := make(chan string, 1)
	done := make(chan int, 1)
	go func() {
		done <- runServe(ctx, []string{"--headless", "--json", "--grpc-addr", "off", "--http-addr", "127.0.0.1:0"},
			&stdout, &stderr, false, func(r *runningReceivers) { addr <- r.HTTPAddr })
	}()
	base := "http://" + <-addr + "/v1/traces"
	send := func(ct, enc string, body []byte) int {
		req, _ := http.NewRequest(http.MethodPost, base, bytes.NewReader(body))
		req.Header.Set("Content-Type", ct)
		if enc != "" {
			req.Header.Set("Content-Encoding", enc)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for range 3 {
		if code := send("application/json", "br", lines[0]); code != http.StatusUnsupportedMediaType {
			t.Fatalf("br: %d, want 415", code)
		}
	}
	if code := send("text/plain", "", lines[0]); code != http.StatusUnsupportedMediaType {
		t.Fatalf("text/plain: %d, want 415", code)
	}
	if code := send("application/json", "", lines[0]); code != http.StatusOK {
		t.Fatalf("good request: %d", code)
	}
	time.Sleep(1200 * time.Millisecond) // one status line
	cancel()
	if code := <-done; code != exitOK {
		t.Fatalf("serve exited %d: %s", code, stderr.String())
	}
	var sum serveSummary
	if err := json.Unmarshal([]byte(stdout.String()), &sum); err != nil {
		t.Fatal(err)
	}
	if sum.RequestsRefused["unsupported_encoding"] != 3 || sum.RequestsRefused["unsupported_content_type"] != 1 || len(sum.RequestsRefused) != 2 {
		t.Errorf("requests_refused = %v", sum.RequestsRefused)
	}
	if sum.SpansDropped != 0 || sum.SpansReceived == 0 {
		t.Errorf("spans_dropped %d, spans_received %d", sum.SpansDropped, sum.SpansReceived)
	}
	errs := stderr.String()
	if !strings.Contains(errs, "requests_refused=4 (unsupported_encoding=3, unsupported_content_type=1)") {
		t.Errorf("no status line with the refusals:\n%s", errs)
	}
	if n := strings.Count(errs, "refused request from 127.0.0.1:"); n != 2 {
		t.Errorf("%d refusal log lines, want one per reason:\n%s", n, errs)
	}
	if !strings.Contains(errs, `unsupported_encoding: POST /v1/traces content-type "application/json" content-encoding "br"`) {
		t.Errorf("log does not say what was sent:\n%s", errs)
	}
}
