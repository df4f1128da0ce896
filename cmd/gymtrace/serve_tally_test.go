package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gate/whatif"
	"github.com/nemo-gym/gymtrace/internal/testfile"
	"github.com/nemo-gym/gymtrace/model"
	"github.com/nemo-gym/gymtrace/receiver"
)

// headlessServe runs serve --headless --json on loopback until stop is
// called, which returns the exit code, stdout and stderr.
func headlessServe(t *testing.T, extra ...string) (base string, stderr *syncBuffer, stop func() (int, string)) {
	t.Helper()
	args := append([]string{"--headless", "--json", "--grpc-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", "--spec", "all"}, extra...)
	ctx, cancel := context.WithCancel(context.Background())
	var stdout syncBuffer
	stderr = &syncBuffer{}
	addr := make(chan string, 1)
	done := make(chan int, 1)
	go func() {
		done <- runServe(ctx, args, &stdout, stderr, false, func(r *runningReceivers) { addr <- r.HTTPAddr })
	}()
	select {
	case a := <-addr:
		base = "http://" + a
	case code := <-done:
		cancel()
		t.Fatalf("serve exited %d before listening: %s", code, stderr.String())
	}
	t.Cleanup(cancel)
	return base, stderr, func() (int, string) {
		cancel()
		select {
		case code := <-done:
			return code, stdout.String()
		case <-time.After(30 * time.Second):
			t.Fatal("serve did not stop")
		}
		return 0, ""
	}
}

var statusRe = regexp.MustCompile(`spans=(\d+) rollouts=(\d+) .* in_flight=(\d+) joined=(\d+) split=(\d+) pending=(\d+) tallied=(\d+)`)

// waitStatus waits for a status line whose rollouts are counted over spans
// spans and returns its rollouts, in_flight, joined, split and pending.
func waitStatus(t *testing.T, stderr *syncBuffer, spans int) [5]int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		if m := statusRe.FindStringSubmatch(lines[len(lines)-1]); m != nil && m[1] == strconv.Itoa(spans) && m[7] == m[1] {
			var out [5]int
			for i := range out {
				out[i], _ = strconv.Atoi(m[i+2])
			}
			return out
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no status line with spans=%d:\n%s", spans, stderr.String())
	return [5]int{}
}

// TestServeCountsRolloutsAsCheck replays real Gym OTLP captures into serve
// in batches, the driver's (and NeMo-RL's) last, as in real runs where
// gym.job and the driver's calls end after the rollouts they hold. Before
// the driver's spans arrive every rollout is there, in flight, and its
// spans make no rollout of their own; after, the headless summary counts
// what `check` counts over the record and what the truth says.
func TestServeCountsRolloutsAsCheck(t *testing.T) {
	for _, c := range []struct {
		dir    string
		caller string // the process whose spans hold the rollouts' roots
	}{
		{"s41-obs0-iso/all-otlp", "nemo-gym/orchestrator"},
		{"s61-rl-iso/rl-all-otlp", "nemo-rl"},
	} {
		t.Run(c.dir, func(t *testing.T) {
			dir := filepath.Join("..", "..", "testdata", "real-gym", c.dir)
			var truth struct {
				Spans, Rollouts int
			}
			raw, err := os.ReadFile(filepath.Join(dir, "summary.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(raw, &truth); err != nil {
				t.Fatal(err)
			}
			early, late, _ := testfile.EarlyLate(t, filepath.Join(dir, "otlp", "traces.jsonl.gz"), c.caller, 64)
			rec := filepath.Join(t.TempDir(), "rec.jsonl")
			base, stderr, stop := headlessServe(t, "--record", rec)
			sent := 0
			for _, b := range early {
				post(t, base+"/v1/traces", "application/json", b)
				sent += strings.Count(string(b), `"spanId"`)
			}
			st := waitStatus(t, stderr, sent)
			if st[0] != truth.Rollouts || st[1] != truth.Rollouts {
				t.Errorf("before the caller's spans: rollouts=%d in_flight=%d, want %d rollouts, all in flight", st[0], st[1], truth.Rollouts)
			}
			if st[2]+st[3] != 0 || st[4] != st[0] {
				t.Errorf("before the caller's spans: joined=%d split=%d pending=%d, want every rollout pending", st[2], st[3], st[4])
			}
			for _, b := range late {
				post(t, base+"/v1/traces", "application/json", b)
			}
			code, out := stop()
			if code != exitOK {
				t.Fatalf("serve exited %d: %s", code, stderr.String())
			}
			var sum serveSummary
			if err := json.Unmarshal([]byte(out), &sum); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			store := model.NewStore(model.Options{})
			defer store.Close()
			if _, err := receiver.ReadFiles(store, []string{rec}, receiver.ReadOptions{}); err != nil {
				t.Fatal(err)
			}
			store.Sync()
			rep := whatif.NewEngine(groups.Default()).Check(store.Snapshot(), time.Now(), 0)
			if sum.Rollouts != rep.Rollouts || sum.Rollouts != truth.Rollouts || sum.RolloutsJoined != rep.Joined || sum.RolloutsSplit != rep.Split {
				t.Errorf("summary rollouts %d (joined %d, split %d); check of the record %d (%d, %d); truth %d",
					sum.Rollouts, sum.RolloutsJoined, sum.RolloutsSplit, rep.Rollouts, rep.Joined, rep.Split, truth.Rollouts)
			}
			if sum.Job != "ended" {
				t.Errorf("job %q, want ended", sum.Job)
			}
		})
	}
}

// TestServeNonGymTrafficHasNoRollouts: spans of services that are no Gym
// process (telemetrygen's client and server pair, a stranger's HTTP calls)
// make no rollout in the status line or the summary.
func TestServeNonGymTrafficHasNoRollouts(t *testing.T) {
	base, stderr, stop := headlessServe(t)
	ctx := context.Background()
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(base+"/v1/traces"))
	if err != nil {
		t.Fatal(err)
	}
	for _, svc := range []string{"telemetrygen", "billing"} {
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", svc))))
		tr := tp.Tracer("load")
		for i := 0; i < 3; i++ {
			c, parent := tr.Start(ctx, "lets-go", trace.WithSpanKind(trace.SpanKindClient))
			_, child := tr.Start(c, "okey-dokey", trace.WithSpanKind(trace.SpanKindServer))
			child.End()
			parent.End()
			_, post := tr.Start(ctx, "POST /charge", trace.WithSpanKind(trace.SpanKindServer))
			post.End()
		}
		if err := tp.ForceFlush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	st := waitStatus(t, stderr, 18)
	if st[0] != 0 {
		t.Errorf("status line: rollouts=%d, want 0 for traffic of no Gym process", st[0])
	}
	code, out := stop()
	if code != exitOK {
		t.Fatalf("serve exited %d: %s", code, stderr.String())
	}
	var sum serveSummary
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Rollouts != 0 || sum.SpansStored != 18 {
		t.Errorf("summary: rollouts %d, spans %d; want 0 rollouts of 18 spans", sum.Rollouts, sum.SpansStored)
	}
}
