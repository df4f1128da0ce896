package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
)

// TestServePortInUseHint starts serve on ports this test holds: the error
// names the address, who holds it (this process, found through /proc) and
// the flag that picks another port, for each transport.
func TestServePortInUseHint(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	taken := ln.Addr().String()
	for _, c := range []struct {
		args []string
		flag string
	}{
		{[]string{"--grpc-addr", taken, "--http-addr", "127.0.0.1:0"}, "--grpc-addr"},
		{[]string{"--grpc-addr", "127.0.0.1:0", "--http-addr", taken}, "--http-addr"},
	} {
		var stdout, stderr syncBuffer
		code := runServe(context.Background(), append([]string{"--headless"}, c.args...), &stdout, &stderr, false, nil)
		out := stderr.String()
		if code != exitUsage {
			t.Errorf("%s taken: exit %d, want %d", c.flag, code, exitUsage)
		}
		for _, want := range []string{"address already in use", taken + " is held by", c.flag + " 127.0.0.1:0"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s taken: error lacks %q:\n%s", c.flag, want, out)
			}
		}
		if _, err := os.Stat("/proc/net/tcp"); err == nil && !strings.Contains(out, fmt.Sprintf("pid %d (", os.Getpid())) {
			t.Errorf("%s taken: error does not name this process (pid %d):\n%s", c.flag, os.Getpid(), out)
		}
	}
}
