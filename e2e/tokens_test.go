package e2e

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/nemo-gym/gymtrace/gate/rollouts"
	"github.com/nemo-gym/gymtrace/gymsim"
)

// TestTokensFleet runs the fleet with a model backend whose spans report
// token usage, over real OTLP, and checks the per-rollout sums against what
// the backend answered: exact, each call once although the gateway's span
// and vLLM's both report it.
func TestTokensFleet(t *testing.T) {
	for _, tc := range []struct {
		backend, protocol, spec string
		seed                    int64
	}{
		{gymsim.BackendGateway, "http", "all", 7},
		{gymsim.BackendVLLM, "grpc", "all", 8},
		{gymsim.BackendGateway, "grpc", "default", 9},
	} {
		t.Run(tc.backend+"-"+tc.spec, func(t *testing.T) {
			r := startReceiver(t)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cfg := gymsim.Config{Seed: tc.seed, Spec: tc.spec, ModelBackend: tc.backend, Rollouts: rolloutsPerRun, Concurrency: 4,
				Protocol: tc.protocol, RecordTruth: true, Latency: time.Millisecond}
			if tc.protocol == "grpc" {
				cfg.Endpoint = r.grpcAddr
			} else {
				cfg.Endpoint = r.httpAddr
			}
			f, err := gymsim.Start(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			f.Wait()
			if err := f.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
			r.store.Sync()
			want := f.Tokens()
			truth := f.Truth()
			rolloutOf := map[trace.SpanID]int{}
			carrying := 0
			for _, s := range truth {
				rolloutOf[s.SpanID] = s.Rollout
				if s.Group == gymsim.GroupBackend {
					carrying++
				}
			}
			calls := 0
			for _, u := range want {
				calls += u.Calls
			}
			if len(want) != rolloutsPerRun || calls == 0 {
				t.Fatalf("backend answered %d rollouts, %d calls; want %d rollouts", len(want), calls, rolloutsPerRun)
			}
			// Under the gateway both the client span and vLLM's report
			// every call: twice the calls in spans.
			if per := map[string]int{gymsim.BackendGateway: 2, gymsim.BackendVLLM: 1}[tc.backend]; carrying != per*calls {
				t.Fatalf("%d spans carry usage, want %d per call of %d", carrying, per, calls)
			}

			st := rollouts.NewFinder().Structure(r.store.Snapshot())
			rep := st.Tokens()
			if len(rep.PerRollout) != rolloutsPerRun {
				t.Fatalf("tokens in %d rollouts, want %d", len(rep.PerRollout), rolloutsPerRun)
			}
			var total gymsim.Usage
			for _, ro := range st.Rollouts {
				idx := rolloutOf[trace.SpanID(ro.Fragments[0].Spans[0].SpanID)]
				got, w := rep.PerRollout[ro.ID], want[idx]
				if got.Input != w.Input || got.Output != w.Output || got.Calls != w.Calls {
					t.Errorf("rollout %s (fleet's %d): %d in, %d out, %d calls; the backend answered %d, %d, %d",
						ro.ID, idx, got.Input, got.Output, got.Calls, w.Input, w.Output, w.Calls)
				}
				if len(got.Models) != 1 || got.Models[0] != "gymsim/policy-8b" {
					t.Errorf("rollout %s: models %q", ro.ID, got.Models)
				}
				total.Input += w.Input
				total.Output += w.Output
				total.Calls += w.Calls
			}
			if rep.Total.Input != total.Input || rep.Total.Output != total.Output || rep.Total.Calls != total.Calls {
				t.Errorf("total %+v, want %+v", rep.Total, total)
			}
			if rep.Outside.Present() {
				t.Errorf("usage outside rollouts: %+v", rep.Outside)
			}
		})
	}
}

// TestTokensFleetAbsent: without a backend no span reports usage, and the
// summary is empty.
func TestTokensFleetAbsent(t *testing.T) {
	r := startReceiver(t)
	runFleet(t, r, "grpc", gymsim.Config{Seed: 3, Spec: "all"})
	rep := rollouts.NewFinder().Structure(r.store.Snapshot()).Tokens()
	if rep.PerRollout != nil || rep.Total.Present() || rep.Outside.Present() {
		t.Fatalf("tokens without a backend: %+v", rep)
	}
}
