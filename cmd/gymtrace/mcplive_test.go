package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nemo-gym/gymtrace/gate/report"
	"github.com/nemo-gym/gymtrace/internal/testfile"
	"github.com/nemo-gym/gymtrace/receiver"
)

// bearer adds a token to every request, as an MCP client configured with
// headers does.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestServeMCPLive replays a real Gym run into serve with --mcp-addr and a
// token, and reads it over streamable HTTP while it arrives: in flight
// before the driver's spans, joined after, as the status line counts; a
// request without the token is refused.
func TestServeMCPLive(t *testing.T) {
	const token = "s3cret"
	dir := filepath.Join("..", "..", "testdata", "real-gym", "s41-obs0-iso", "all-otlp")
	early, late, _ := testfile.EarlyLate(t, filepath.Join(dir, "otlp", "traces.jsonl.gz"), "nemo-gym/orchestrator", 64)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	ready := make(chan *runningReceivers, 1)
	done := make(chan int, 1)
	go func() {
		done <- runServe(ctx, []string{"--headless", "--grpc-addr", "off", "--http-addr", "127.0.0.1:0", "--mcp-addr", "127.0.0.1:0",
			"--auth-token", token, "--spec", "all"}, &stdout, &stderr, false, func(r *runningReceivers) { ready <- r })
	}()
	var rr *runningReceivers
	select {
	case rr = <-ready:
	case code := <-done:
		t.Fatalf("serve exited %d: %s", code, stderr.String())
	}
	if rr.MCPAddr == "" || !strings.Contains(stderr.String(), "MCP (streamable HTTP) on http://"+rr.MCPAddr) {
		t.Fatalf("no MCP address said: %q (stderr %s)", rr.MCPAddr, stderr.String())
	}
	send := func(b []byte) {
		req, _ := http.NewRequest("POST", "http://"+rr.HTTPAddr+"/v1/traces", bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("POST: %s", resp.Status)
		}
	}

	// Without the token: 401, and no session.
	resp, err := http.Post("http://"+rr.MCPAddr+"/", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("no token: %s, want 401", resp.Status)
	}

	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + rr.MCPAddr + "/",
		HTTPClient: &http.Client{Transport: bearer{token}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	status := func() report.Status {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "status"})
		if err != nil || res.IsError {
			t.Fatalf("status: %v %+v", err, res)
		}
		b, _ := json.Marshal(res.StructuredContent)
		var s report.Status
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	waitFor := func(what string, ok func(report.Status) bool) report.Status {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			s := status()
			if ok(s) {
				return s
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: last status %+v", what, s)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	// Tools are called while spans arrive: each call reads a snapshot.
	go func() {
		for _, b := range early {
			send(b)
		}
	}()
	const rollouts = 20
	s := waitFor("every rollout in flight", func(s report.Status) bool { return s.Rollouts == rollouts && s.InFlight == rollouts })
	if !s.Live || s.RolloutsJoined+s.RolloutsSplit != 0 || s.RolloutsPending != rollouts {
		t.Errorf("before the driver's spans: %+v, want %d pending, all in flight", s, rollouts)
	}
	var l report.RolloutList
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "list_rollouts", Arguments: map[string]any{"limit": 5}})
	if err != nil || res.IsError {
		t.Fatalf("list_rollouts: %v %+v", err, res)
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &l); err != nil || len(l.Rollouts) != 5 || l.Total != rollouts || !l.Rollouts[0].InFlight {
		t.Errorf("list_rollouts while in flight: %+v (%v)", l, err)
	}
	for _, b := range late {
		send(b)
	}
	// Files are judged at once; live rollouts wait out the grace window.
	s = waitFor("every rollout judged", func(s report.Status) bool { return s.RolloutsJoined+s.RolloutsSplit == rollouts })
	if s.InFlight != 0 || s.RolloutsJoined != rollouts {
		t.Errorf("after the driver's spans: %+v, want %d joined", s, rollouts)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
}

// TestServeMCPExposed: --mcp-addr beyond loopback without a token is
// refused before anything listens there, as the receivers refuse it.
func TestServeMCPExposed(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := runServe(context.Background(), []string{"--headless", "--grpc-addr", "off", "--http-addr", "127.0.0.1:0", "--mcp-addr", "0.0.0.0:0"},
		&stdout, &stderr, false, nil)
	if code != exitUsage || !strings.Contains(stderr.String(), "--mcp-addr: refusing to listen beyond loopback without a token: 0.0.0.0:0 is not a loopback address") {
		t.Errorf("exit %d, stderr %q", code, stderr.String())
	}
}

// TestServeMCPCursorLive pages list_rollouts over a live serve store while
// rollouts arrive between two pages: the second page goes on after the
// first's last row, wherever the new rollouts sort, repeating and skipping
// none of those listed before, and says that the listing changed.
func TestServeMCPCursorLive(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	ready := make(chan *runningReceivers, 1)
	done := make(chan int, 1)
	go func() {
		done <- runServe(ctx, []string{"--headless", "--grpc-addr", "off", "--http-addr", "127.0.0.1:0", "--mcp-addr", "127.0.0.1:0", "--spec", "all"},
			&stdout, &stderr, false, func(r *runningReceivers) { ready <- r })
	}()
	var rr *runningReceivers
	select {
	case rr = <-ready:
	case code := <-done:
		t.Fatalf("serve exited %d: %s", code, stderr.String())
	}
	send := func(path string) {
		t.Helper()
		for _, line := range testfile.Lines(t, path) {
			resp, err := http.Post("http://"+rr.HTTPAddr+"/v1/traces", "application/json", bytes.NewReader(line))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("POST: %s", resp.Status)
			}
		}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: "http://" + rr.MCPAddr + "/"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	list := func(args map[string]any) report.RolloutList {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "list_rollouts", Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("list_rollouts(%v): %v %+v", args, err, res)
		}
		b, _ := json.Marshal(res.StructuredContent)
		var l report.RolloutList
		if err := json.Unmarshal(b, &l); err != nil {
			t.Fatal(err)
		}
		return l
	}
	ids := func(l report.RolloutList) []string {
		var out []string
		for _, r := range l.Rollouts {
			out = append(out, r.RolloutID)
		}
		return out
	}
	// settled waits for n rollouts listed alike three times running: a
	// rollout without an id is named by its root, which may arrive last.
	settled := func(n int) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		var last []string
		for same := 0; same < 3; {
			l := list(map[string]any{"limit": 500})
			if got := ids(l); l.Total == n && slices.Equal(got, last) {
				same++
			} else {
				same, last = 0, got
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d rollouts listed, want %d, settled", l.Total, n)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	send(filepath.Join("..", "..", "testdata", "real-gym", "s41-obs0-iso", "all-otlp", "otlp", "traces.jsonl.gz"))
	settled(20)
	sorts := []string{"", "id", "-start", "-spans"}
	before := map[string][]string{} // every row, in order, before more arrive
	first := map[string]report.RolloutList{}
	for _, s := range sorts {
		before[s] = ids(list(map[string]any{"sort": s, "limit": 500}))
		first[s] = list(map[string]any{"sort": s, "limit": 5})
		if got := ids(first[s]); !slices.Equal(got, before[s][:5]) || !first[s].Truncated {
			t.Fatalf("sort %q: page 1 %v, want %v, truncated", s, got, before[s][:5])
		}
		// Unchanged, the next page is the next five.
		if got := ids(list(map[string]any{"sort": s, "limit": 5, "cursor": first[s].NextCursor})); !slices.Equal(got, before[s][5:10]) {
			t.Errorf("sort %q, store unchanged: page 2 %v, want %v", s, got, before[s][5:10])
		}
	}

	// Another run's 20 rollouts arrive between the pages.
	send(filepath.Join("..", "..", "testdata", "real-gym", "s61-rl-iso", "rl-all-otlp", "otlp", "traces.jsonl.gz"))
	settled(40)
	for _, s := range sorts {
		now := ids(list(map[string]any{"sort": s, "limit": 500}))
		p2 := list(map[string]any{"sort": s, "limit": 5, "cursor": first[s].NextCursor})
		got := ids(p2)
		// The page is the rows after page 1's last in today's order.
		at := slices.Index(now, before[s][4])
		if at < 0 || !slices.Equal(got, now[at+1:min(at+6, len(now))]) {
			t.Errorf("sort %q: page 2 %v, want the rows after %s in %v", s, got, before[s][4], now)
		}
		for _, id := range got {
			if slices.Contains(before[s][:5], id) {
				t.Errorf("sort %q: page 2 repeats %s of page 1", s, id)
			}
		}
		if p2.Total != 40 || !slices.ContainsFunc(p2.Notes, func(n string) bool {
			return strings.Contains(n, "store changed since the previous page (20 rollouts matched then, 40 now)")
		}) {
			t.Errorf("sort %q: page 2 total %d, notes %q", s, p2.Total, p2.Notes)
		}
	}
	// A cursor of another sort is refused.
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "list_rollouts", Arguments: map[string]any{"sort": "id", "cursor": first[""].NextCursor}})
	if err != nil || !res.IsError {
		t.Errorf("cursor of another sort: %v %+v", err, res)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
}

// startServe runs serve with args until the test ends, and returns its
// receivers once they listen.
func startServe(t *testing.T, args ...string) (*runningReceivers, *syncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	ready := make(chan *runningReceivers, 1)
	done := make(chan int, 1)
	go func() {
		done <- runServe(ctx, append([]string{"--headless", "--grpc-addr", "off", "--http-addr", "127.0.0.1:0"}, args...),
			&stdout, &stderr, false, func(r *runningReceivers) { ready <- r })
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop")
		}
	})
	select {
	case rr := <-ready:
		return rr, &stderr
	case code := <-done:
		t.Fatalf("serve %q exited %d: %s", args, code, stderr.String())
	}
	return nil, nil
}

// mcpStatus connects the SDK's client to addr over streamable HTTP (with
// hc, nil: the default) and calls status.
func mcpStatus(t *testing.T, addr string, hc *http.Client) (report.Status, error) {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/", HTTPClient: hc}, nil)
	if err != nil {
		return report.Status{}, err
	}
	defer cs.Close()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "status"})
	if err != nil || res.IsError {
		t.Fatalf("status: %v %+v", err, res)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var s report.Status
	return s, json.Unmarshal(b, &s)
}

// TestServeMCPBeyondLoopback: on every address (0.0.0.0), --insecure
// serves MCP with no token and warns so; --auth-token serves it to
// requests with the token only, with no warning.
func TestServeMCPBeyondLoopback(t *testing.T) {
	port := func(rr *runningReceivers) string {
		_, p, err := net.SplitHostPort(rr.MCPAddr)
		if err != nil {
			t.Fatal(err)
		}
		return "127.0.0.1:" + p
	}
	t.Run("insecure", func(t *testing.T) {
		rr, stderr := startServe(t, "--mcp-addr", "0.0.0.0:0", "--insecure")
		if host, _, _ := net.SplitHostPort(rr.MCPAddr); receiver.IsLoopback(rr.MCPAddr) || host == "127.0.0.1" {
			t.Fatalf("bound %s, want every address", rr.MCPAddr)
		}
		if want := "warning: --insecure: MCP on " + rr.MCPAddr + " answers anyone who can reach it, with no token"; !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr %q lacks %q", stderr.String(), want)
		}
		s, err := mcpStatus(t, port(rr), nil)
		if err != nil || !s.Live {
			t.Errorf("status with no token: %+v, %v", s, err)
		}
	})
	t.Run("token", func(t *testing.T) {
		const token = "t0ken"
		rr, stderr := startServe(t, "--mcp-addr", "0.0.0.0:0", "--auth-token", token)
		if strings.Contains(stderr.String(), "warning: --insecure") {
			t.Errorf("warned with a token: %s", stderr.String())
		}
		if _, err := mcpStatus(t, port(rr), nil); err == nil || !strings.Contains(err.Error(), "Unauthorized") {
			t.Errorf("no token: %v, want 401", err)
		}
		s, err := mcpStatus(t, port(rr), &http.Client{Transport: bearer{token}})
		if err != nil || !s.Live {
			t.Errorf("status with the token: %+v, %v", s, err)
		}
	})
}

// TestDemoMCP runs the demo with --mcp-addr on free ports and reads its
// live store over streamable HTTP with the SDK's client: status counts the
// fleet's rollouts, and list_rollouts shows them with the rewards of the
// rollout files the fleet writes.
func TestDemoMCP(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- runDemo(ctx, append(append([]string(nil), demoArgs...), "--headless", "--observability", "--rate", "20", "--mcp-addr", "127.0.0.1:0"),
			&stdout, &stderr, false)
	}()
	said := regexp.MustCompile(`gymtrace demo: MCP \(streamable HTTP\) on http://(127\.0\.0\.1:[0-9]+)/`)
	var addr string
	for deadline := time.Now().Add(20 * time.Second); addr == ""; {
		if m := said.FindStringSubmatch(stderr.String()); m != nil {
			addr = m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("no MCP address said: %s", stderr.String())
		}
		select {
		case code := <-done:
			t.Fatalf("demo exited %d: %s", code, stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tool := func(name string, args map[string]any, out any) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", name, err, res)
		}
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatal(err)
		}
	}
	var (
		s       report.Status
		l       report.RolloutList
		rewards int
	)
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		tool("status", nil, &s)
		tool("list_rollouts", map[string]any{"limit": 500}, &l)
		rewards = 0
		for _, r := range l.Rollouts {
			if r.Evidence != nil && r.Evidence.Reward != nil {
				rewards++
			}
		}
		if s.RolloutsJoined >= 8 && rewards >= 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 60 s: status %+v, %d of %d rows with a reward", s, rewards, len(l.Rollouts))
		}
	}
	if !s.Live || s.GymVariant != "G1" || s.Evidence == nil || s.SpansStored == 0 {
		t.Errorf("status: %+v", s)
	}
	if l.Total < s.Rollouts || len(l.Rollouts) == 0 || l.Rollouts[0].Spans == 0 {
		t.Errorf("list_rollouts: total %d, status %d rollouts, rows %+v", l.Total, s.Rollouts, l.Rollouts)
	}
	cancel()
	select {
	case code := <-done:
		if code != exitOK {
			t.Errorf("demo exited %d: %s", code, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("demo did not stop")
	}
}

// TestDemoMCPExposed: the demo's --mcp-addr beyond loopback without a
// token is refused, as serve refuses it.
func TestDemoMCPExposed(t *testing.T) {
	t.Setenv(envAuthToken, "")
	var stdout, stderr bytes.Buffer
	code := runDemo(context.Background(), append(append([]string(nil), demoArgs...), "--headless", "--mcp-addr", "0.0.0.0:0"), &stdout, &stderr, false)
	if code == exitOK || !strings.Contains(stderr.String(), "--mcp-addr: refusing to listen beyond loopback without a token: 0.0.0.0:0 is not a loopback address") {
		t.Errorf("exit %d, stderr %q", code, stderr.String())
	}
}
