package receiver

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/nemo-gym/gymtrace/model"
)

// TestShutdownDeadlineIsNotAnError stops a server while a request body is
// still arriving, with a deadline shorter than the stop's grace: the
// connection is closed at the deadline, the sender gets no acknowledgement,
// and Shutdown reports no failure, as on gRPC, since the bound did its job.
func TestShutdownDeadlineIsNotAnError(t *testing.T) {
	st := model.NewStore(model.Options{})
	defer st.Close()
	srv, err := NewServer(Config{Store: st, GRPCAddr: Off, HTTPAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, addr := srv.Addrs()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\nContent-Length: 1000\r\n\r\n0123456789")
	time.Sleep(100 * time.Millisecond) // the server is reading the body

	ctx, cancel := context.WithTimeout(context.Background(), DefaultStopGrace/5)
	defer cancel()
	start := time.Now()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown at its deadline with a body still arriving: %v; want nil", err)
	}
	if took := time.Since(start); took > DefaultStopGrace {
		t.Errorf("Shutdown took %v; want it to end at its deadline (%v)", took, DefaultStopGrace/5)
	}
	conn.SetReadDeadline(time.Now().Add(2 * time.Second))
	if resp, err := http.ReadResponse(bufio.NewReader(conn), nil); err == nil && resp.StatusCode == http.StatusOK {
		t.Errorf("the cut request was answered %s; want no acknowledgement", resp.Status)
	}
}
