package gymsim

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/nemo-gym/gymtrace/gate"
)

var reg = gate.Default()

var all = reg.All()

func spec(t *testing.T, s string) gate.Set {
	t.Helper()
	set, err := reg.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// runFleet runs cfg to completion and shuts the fleet down.
func runFleet(t *testing.T, cfg Config) *Fleet {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f, err := Start(ctx, cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	f.Wait()
	if err := f.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if st := f.Stats(); st.Completed != int64(cfg.Rollouts) {
		t.Fatalf("completed %d rollouts, want %d", st.Completed, cfg.Rollouts)
	}
	return f
}

// expectedRequests is how many HTTP calls rollout p makes under any spec:
// the driver's /run, seed_session, the agent's own /v1/responses, every
// attempt of every model and tool call, and verify unless a sandbox failed.
func expectedRequests(p rolloutPlan) int {
	n := 3
	for _, tp := range p.Turns {
		n += tp.Model503 + 1
		for _, tool := range tp.Tools {
			n += tool.Fail503 + 1
		}
	}
	if !p.SandboxFail {
		n++
	}
	return n
}

func TestPlanDeterministic(t *testing.T) {
	for _, seed := range []int64{1, 2, 99} {
		for n := 0; n < 20; n++ {
			a, b := planRollout(seed, n), planRollout(seed, n)
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("planRollout(%d, %d) differs between calls", seed, n)
			}
			if a.ID != fmt.Sprintf("r-%d-%04d", seed, n) {
				t.Fatalf("id %q", a.ID)
			}
			for _, tp := range a.Turns {
				if tp.Model503 >= maxAttempts {
					t.Fatalf("plan %s: %d model 503s cannot succeed in %d attempts", a.ID, tp.Model503, maxAttempts)
				}
			}
		}
	}
	if reflect.DeepEqual(planRollout(1, 0).Turns, planRollout(2, 0).Turns) && reflect.DeepEqual(planRollout(1, 1).Turns, planRollout(2, 1).Turns) {
		t.Error("seeds 1 and 2 draw the same rollouts")
	}
	// Over many rollouts every shape the fixtures show appears.
	var sandbox, verify, m503, t503, apis [3]int
	for n := 0; n < 200; n++ {
		p := planRollout(5, n)
		apis[p.API]++
		if p.SandboxFail {
			sandbox[0]++
		}
		if p.VerifyFail {
			verify[0]++
		}
		for _, tp := range p.Turns {
			if tp.Model503 > 0 {
				m503[0]++
			}
			for _, tool := range tp.Tools {
				if tool.Fail503 > 0 {
					t503[0]++
				}
			}
		}
	}
	for name, c := range map[string]int{"sandbox failures": sandbox[0], "verify failures": verify[0], "model 503s": m503[0], "tool 503s": t503[0], "responses": apis[0], "chat": apis[1], "messages": apis[2]} {
		if c == 0 {
			t.Errorf("200 rollouts have no %s", name)
		}
	}
}

// byRollout groups truth spans by rollout id.
func byRollout(truth []TruthSpan) map[string][]TruthSpan {
	out := map[string][]TruthSpan{}
	for _, s := range truth {
		out[s.RolloutID] = append(out[s.RolloutID], s)
	}
	return out
}

func traces(spans []TruthSpan) int {
	ids := map[trace.TraceID]bool{}
	for _, s := range spans {
		ids[s.TraceID] = true
	}
	return len(ids)
}

// TestGating runs one seed under several specs and checks what each gate
// lets through and how propagation joins or splits the rollouts.
func TestGating(t *testing.T) {
	const seed, n = 7, 8
	tests := []struct {
		spec        string
		traces      func(serverSpans int) int // total traces expected
		joined      bool                      // every rollout in one trace
		clientSpans bool
		serverSpans bool
	}{
		{"all", func(int) int { return 1 }, true, true, true},
		{"default", func(int) int { return 1 }, true, true, true},
		{"per_rollout", func(int) int { return n }, true, true, true},
		// No http_client: no header, every SERVER span starts a trace.
		{"server,rollout,verify", func(s int) int { return s }, false, false, true},
		// No server: nobody extracts; every handler starts a trace.
		{"http_client,rollout", nil, false, true, false},
		{"job", func(int) int { return 1 }, true, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			set := spec(t, tt.spec)
			f := runFleet(t, Config{Seed: seed, Spec: set, Rollouts: n, Protocol: "none", RecordTruth: true})
			truth := f.Truth()
			if int64(len(truth)) != f.Stats().Spans {
				t.Fatalf("truth has %d spans, stats %d", len(truth), f.Stats().Spans)
			}
			ids := map[trace.SpanID]TruthSpan{}
			servers := 0
			for _, s := range truth {
				if !set.Has(s.Group) {
					t.Fatalf("span %s of group %s emitted under %q", s.Name, reg.Name(s.Group), tt.spec)
				}
				ids[s.SpanID] = s
				if s.Kind == trace.SpanKindServer {
					servers++
				}
				if s.Group != gate.Job && s.RolloutID == "" {
					t.Fatalf("span %s has no rollout", s.Name)
				}
			}
			var clients int
			for _, s := range truth {
				switch s.Kind {
				case trace.SpanKindClient:
					clients++
				case trace.SpanKindServer:
					p, ok := ids[s.ParentID]
					if set.Has(gate.HTTPClient) && (!ok || p.Kind != trace.SpanKindClient) {
						t.Fatalf("SERVER %s parent %v is not a CLIENT span", s.Name, p)
					}
					if !set.Has(gate.HTTPClient) && s.ParentID.IsValid() {
						t.Fatalf("SERVER %s has a parent without http_client", s.Name)
					}
				}
				if !set.Has(gate.Server) && s.Name == "gym.rollout" && s.ParentID.IsValid() {
					t.Fatalf("gym.rollout has a parent with server off")
				}
			}
			if (clients > 0) != tt.clientSpans || (servers > 0) != tt.serverSpans {
				t.Fatalf("clients=%d servers=%d", clients, servers)
			}
			if tt.traces != nil {
				if got, want := traces(truth), tt.traces(servers); got != want {
					t.Errorf("traces = %d, want %d", got, want)
				}
			}
			for rid, spans := range byRollout(truth) {
				if rid == "" {
					continue
				}
				if got := traces(spans) == 1; got != tt.joined {
					t.Errorf("rollout %s joined=%v, want %v (%d traces)", rid, got, tt.joined, traces(spans))
				}
			}
		})
	}
}

// TestShapeIndependentOfSpec: one seed under two specs makes the same HTTP
// calls per rollout, and the spans a group emits are the same in both.
func TestShapeIndependentOfSpec(t *testing.T) {
	const seed, n = 21, 10
	a := runFleet(t, Config{Seed: seed, Spec: all, Rollouts: n, Concurrency: 3, Protocol: "none", RecordTruth: true})
	b := runFleet(t, Config{Seed: seed, Spec: spec(t, "per_rollout"), Rollouts: n, Concurrency: 1, Protocol: "none", RecordTruth: true})
	if want := int64(sumRequests(seed, n)); a.Stats().Requests != want || b.Stats().Requests != want {
		t.Fatalf("requests all=%d per_rollout=%d, plan makes %d", a.Stats().Requests, b.Stats().Requests, want)
	}
	count := func(f *Fleet, g gate.Group) map[string][]string {
		out := map[string][]string{}
		for _, s := range f.Truth() {
			if s.Group == g {
				out[s.RolloutID] = append(out[s.RolloutID], s.Name)
			}
		}
		for _, v := range out {
			sort.Strings(v)
		}
		return out
	}
	for _, g := range []gate.Group{gate.Server, gate.HTTPClient, gate.Rollout, gate.Verify, gate.Agent, gate.ModelCall} {
		if x, y := count(a, g), count(b, g); !reflect.DeepEqual(x, y) || len(x) == 0 {
			t.Errorf("group %s: all %v, per_rollout %v", reg.Name(g), x, y)
		}
	}
}

// TestRequestsFollowPlan: under all, every HTTP call of a rollout is one
// CLIENT span, so the count equals the plan's, retries included; failing
// plans end in ERROR on gym.rollout.
func TestRequestsFollowPlan(t *testing.T) {
	const seed, n = 4, 24
	f := runFleet(t, Config{Seed: seed, Spec: all, Rollouts: n, Protocol: "none", RecordTruth: true})
	roll := byRollout(f.Truth())
	failed := 0
	for i := 0; i < n; i++ {
		p := planRollout(seed, i)
		clients, rolloutErr := 0, false
		for _, s := range roll[p.ID] {
			if s.Kind == trace.SpanKindClient {
				clients++
			}
			if s.Name == "gym.rollout" {
				rolloutErr = s.Status == codes.Error
			}
		}
		if want := expectedRequests(p); clients != want {
			t.Errorf("rollout %s: %d CLIENT spans, plan makes %d calls", p.ID, clients, want)
		}
		if rolloutErr != p.Failed() {
			t.Errorf("rollout %s: gym.rollout error=%v, plan failed=%v", p.ID, rolloutErr, p.Failed())
		}
		if p.Failed() {
			failed++
		}
	}
	if st := f.Stats(); st.Failed != int64(failed) || st.Requests != int64(sumRequests(seed, n)) {
		t.Errorf("stats %+v, want failed=%d requests=%d", st, failed, sumRequests(seed, n))
	}
}

func sumRequests(seed int64, n int) int {
	s := 0
	for i := 0; i < n; i++ {
		s += expectedRequests(planRollout(seed, i))
	}
	return s
}

// TestEgressPropagation checks the one egress function: traceparent is sent
// only from inside an enabled CLIENT span, and names that span as parent.
func TestEgressPropagation(t *testing.T) {
	for _, tt := range []struct {
		spec       string
		wantHeader bool
	}{{"all", true}, {"server,rollout", false}} {
		t.Run(tt.spec, func(t *testing.T) {
			got := make(chan string, 1)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got <- r.Header.Get("traceparent")
			}))
			defer srv.Close()
			f, err := Start(context.Background(), Config{Seed: 1, Spec: spec(t, tt.spec), Rollouts: 1, Protocol: "none", RecordTruth: true})
			if err != nil {
				t.Fatal(err)
			}
			f.Wait()
			before := len(f.Truth())
			status, _, err := f.agent.post(context.Background(), srv.URL+"/ng-rollout/r-x/get_weather?q=1", "r-x", map[string]any{})
			if err != nil || status != 200 {
				t.Fatalf("post: %d %v", status, err)
			}
			if err := f.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			h := <-got
			if (h != "") != tt.wantHeader {
				t.Fatalf("traceparent %q, want header=%v", h, tt.wantHeader)
			}
			truth := f.Truth()[before:]
			if !tt.wantHeader {
				if len(truth) != 0 {
					t.Fatalf("spans emitted without http_client: %+v", truth)
				}
				return
			}
			if len(truth) != 1 || truth[0].Kind != trace.SpanKindClient || truth[0].Name != "HTTP POST" {
				t.Fatalf("truth %+v", truth)
			}
			sc := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": h}))
			if sc.SpanID() != truth[0].SpanID || sc.TraceID() != truth[0].TraceID {
				t.Fatalf("traceparent %s names %s, CLIENT span is %s", h, sc.SpanID(), truth[0].SpanID)
			}
			if !strings.HasPrefix(h, "00-") {
				t.Fatalf("traceparent %q is not W3C version 00", h)
			}
		})
	}
}

func TestStartErrors(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"unknown protocol", Config{Protocol: "zipkin"}, `protocol "zipkin"`},
		{"grpc without endpoint", Config{Protocol: "grpc"}, "no endpoint"},
		{"remote endpoint", Config{Protocol: "http", Endpoint: "10.1.2.3:4318"}, "only loopback"},
		{"console without writer", Config{Protocol: "console"}, "no writer"},
		{"negative rollouts", Config{Protocol: "none", Rollouts: -1}, "rollouts -1"},
		{"unknown process spec", Config{Protocol: "none", ProcessSpecs: map[string]gate.Set{"judge": all}}, `process spec "judge": no such process`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Start(context.Background(), tt.cfg)
			if err == nil {
				f.Shutdown(context.Background())
				t.Fatalf("Start(%+v) succeeded", tt.cfg)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Start error %q, want it to contain %q", err, tt.want)
			}
		})
	}
}

// TestForeverStopsOnShutdown: Rollouts 0 runs until Shutdown, which flushes.
func TestForeverStopsOnShutdown(t *testing.T) {
	f, err := Start(context.Background(), Config{Seed: 2, Spec: all, Protocol: "none", RecordTruth: true, Rate: 200, RunSize: 5})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for f.Stats().Completed < 12 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if err := f.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	st := f.Stats()
	if st.Completed < 12 || st.Completed != st.Started {
		t.Fatalf("stats after shutdown %+v", st)
	}
	jobs := 0
	for _, s := range f.Truth() {
		if s.Name == "gym.job" {
			jobs++
		}
	}
	if want := int((st.Started + 4) / 5); jobs != want {
		t.Fatalf("%d gym.job spans for %d rollouts in runs of 5, want %d", jobs, st.Started, want)
	}
}

func BenchmarkFleetRollouts(b *testing.B) {
	b.ReportAllocs()
	f, err := Start(context.Background(), Config{Seed: 1, Spec: reg.All(), Rollouts: b.N, Protocol: "none"})
	if err != nil {
		b.Fatal(err)
	}
	f.Wait()
	if err := f.Shutdown(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(f.Stats().Spans)/float64(b.N), "spans/rollout")
}

func BenchmarkAppendPythonSpanJSON(b *testing.B) {
	b.ReportAllocs()
	t := &testing.T{}
	sp := stubSpan(t, trace.SpanKindServer, true, nil)
	var buf []byte
	for i := 0; i < b.N; i++ {
		buf = AppendPythonSpanJSON(buf[:0], sp, resourceOrder)
	}
}
