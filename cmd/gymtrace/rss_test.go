package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// peakRSS reads a process's peak resident set (VmHWM) in bytes.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	t.Skip("no VmHWM")
	return 0
}

// gzipBomb is a gzip body that inflates to mb MiB of zeros: one member
// compressing 1 MiB, repeated (a multi-member stream is one gzip body).
func gzipBomb(mb int) []byte {
	var one bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&one, gzip.BestCompression)
	zw.Write(make([]byte, 1<<20))
	zw.Close()
	return bytes.Repeat(one.Bytes(), mb)
}

// maxAttackRSS is the peak resident set serve may reach under the attack
// below (100 stalled bodies declaring 16 MB, 32 gzip bombs at once): the
// requests in flight are bounded (256 MiB by default), a stalled body holds
// what it sent, and a body inflating past the ordinary room is checked
// against the bound keeping nothing. It measures 150-260 MiB; before, it
// was 440-660 MiB, and before bodies grew with their data and inflation
// had a budget, 1.6 GB for the stalled bodies and 4.8 GB for the bombs.
const maxAttackRSS = 400 << 20

// TestServeMemoryUnderSlowBodiesAndBombs drives the real binary.
func TestServeMemoryUnderSlowBodiesAndBombs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and drives the binary")
	}
	sb := startServeBinary(t, "--body-timeout", "20s")
	addr := strings.TrimPrefix(sb.base, "http://")
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := 0; i < 100; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "POST /v1/traces HTTP/1.1\r\nHost: %s\r\nContent-Type: application/x-protobuf\r\nContent-Length: 16000000\r\n\r\n", addr)
		conns = append(conns, c)
	}
	bomb := gzipBomb(256)
	t0 := time.Now()
	var wg sync.WaitGroup
	codes := make([]int, 32)
	client := &http.Client{Timeout: 60 * time.Second}
	for i := range codes {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			req, _ := http.NewRequest(http.MethodPost, sb.base+"/v1/traces", bytes.NewReader(bomb))
			req.Header.Set("Content-Type", "application/x-protobuf")
			req.Header.Set("Content-Encoding", "gzip")
			resp, err := client.Do(req)
			if err != nil {
				t.Errorf("bomb %d: %v", i, err)
				return
			}
			resp.Body.Close()
			codes[i] = resp.StatusCode
		}(i)
	}
	wg.Wait()
	t.Logf("bombs answered after %v", time.Since(t0))
	for i, c := range codes {
		if c != http.StatusRequestEntityTooLarge && c != http.StatusServiceUnavailable {
			t.Errorf("bomb %d answered %d, want 413 (or 503 while the inflation budget is busy)", i, c)
		}
	}
	peak := peakRSS(t, sb.cmd.Process.Pid)
	t.Logf("peak RSS %d MiB with 100 stalled bodies and 32 gzip bombs (answers %v)", peak>>20, codes)
	if peak > maxAttackRSS {
		t.Errorf("peak RSS %d MiB, want under %d MiB", peak>>20, maxAttackRSS>>20)
	}
	for _, c := range conns {
		c.Close()
	}
	conns = nil
	sb.cmd.Process.Signal(os.Interrupt)
	sb.wait(t, 30*time.Second)
}
