package tui_test

import (
	"bytes"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// TestTmuxServeRefusalsKeepScreen refuses a request while serve's TUI owns
// the terminal: the header counts it and names the reason, the log line
// does not scribble over the screen, and it is printed once the TUI exits.
func TestTmuxServeRefusalsKeepScreen(t *testing.T) {
	bin := tmuxBinary(t)
	s := startTmux(t, t.TempDir(), bin+" serve --grpc-addr off --http-addr 127.0.0.1:0", 160, 40)
	scr := s.waitFor("the receiver's address", regexp.MustCompile(`http 127\.0\.0\.1:\d+`))
	addr := regexp.MustCompile(`http (127\.0\.0\.1:\d+)`).FindStringSubmatch(scr)[1]
	// Before the first span: how to point NeMo Gym at this receiver.
	scr = s.waitFor("the empty state's how-to", regexp.MustCompile(`export OTEL_EXPORTER_OTLP_ENDPOINT=http://`+regexp.QuoteMeta(addr)))
	if !strings.Contains(scr, "export OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf") || strings.Contains(scr, "intact 0/0") {
		t.Errorf("the empty screen lacks the HTTP protocol line or claims a verdict:\n%s", scr)
	}
	req, err := http.NewRequest("POST", "http://"+addr+"/v1/traces", bytes.NewReader([]byte("x")))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("Content-Encoding", "br")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnsupportedMediaType {
		t.Fatalf("encoding br answered %d, want 415", resp.StatusCode)
	}
	scr = s.waitFor("the refusal in the header", regexp.MustCompile(`requests refused 1 \(last: unsupported_encoding\)`))
	if strings.Contains(scr, "refused request from") {
		t.Errorf("the refusal's log line is drawn over the TUI:\n%s", scr)
	}
	s.keys("q")
	scr = s.waitFor("exit", regexp.MustCompile(`GYMTRACE-EXITED`))
	if !strings.Contains(scr, `refused request from 127.0.0.1:`) || !strings.Contains(scr, `content-encoding "br"`) {
		t.Errorf("after quitting the screen lacks the refusal's log line:\n%s", scr)
	}
}
