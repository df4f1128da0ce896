package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nemo-gym/gymtrace/gate/report"
	"github.com/nemo-gym/gymtrace/internal/testfile"
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
