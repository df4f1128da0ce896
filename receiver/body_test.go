package receiver

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/nemo-gym/gymtrace/model"
)

// TestStalledBodyTimesOut: a body that stops arriving is answered 408 at
// the body deadline instead of holding its connection for good.
func TestStalledBodyTimesOut(t *testing.T) {
	srv, _ := startServer(t, Config{GRPCAddr: Off, BodyTimeout: 300 * time.Millisecond}, model.Options{})
	_, addr := srv.Addrs()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /v1/traces HTTP/1.1\r\nHost: %s\r\nContent-Type: application/x-protobuf\r\nContent-Length: 16000000\r\n\r\nabc", addr)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	t0 := time.Now()
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer to a stalled body: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Errorf("status %d, want 408", resp.StatusCode)
	}
	if el := time.Since(t0); el > 5*time.Second {
		t.Errorf("answered after %v", el)
	}
	// A sender that goes away mid-body did nothing wrong either: both are
	// counted as incomplete bodies, neither as malformed nor internal.
	c2, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c2, "POST /v1/traces HTTP/1.1\r\nHost: %s\r\nContent-Type: application/x-protobuf\r\nContent-Length: 1000\r\n\r\nabc", addr)
	c2.Close()
	deadline := time.Now().Add(5 * time.Second)
	for srv.Stats().RequestsRefused[ReasonIncomplete] < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := srv.Stats().RequestsRefused; got[ReasonIncomplete] != 2 || len(got) != 1 {
		t.Errorf("refusals %v, want %s=2 alone", got, ReasonIncomplete)
	}
}
