package e2e

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/nemo-gym/gymtrace/gate/whatif"
	"github.com/nemo-gym/gymtrace/gymsim"
)

// Service names of the fleet's processes.
const (
	svcDriver    = "nemo-gym/orchestrator"
	svcAgent     = "nemo-gym/simple_agent"
	svcModel     = "nemo-gym/policy_model"
	svcResources = "nemo-gym/example_single_tool_call"
)

// misconfigured is one fleet where some processes read a different
// span_groups than the rest, as happens when each Gym process reads its own
// config.
type misconfigured struct {
	name string
	spec string
	// off removes groups from single processes' sets, by server name.
	off map[string]string
	// pairs are the (from, to) services of the broken hops; reason is a
	// phrase every broken hop's reason must carry (the fix to look for).
	pairs  []string
	reason string
	// silent names a process that emits no span at all: no capture can
	// name it, so the check names its host:port instead. Only rollout
	// scoped URLs (observability on) tell such a host from a service
	// outside the fleet, so silent cases run with observability.
	silent string
	// obs runs the fleet with observability on. processLevel: the check
	// may name the caller alone ("process never joins"), not the callee:
	// with observability off nothing ties a root /run to the driver's run.
	obs, processLevel bool
}

var misconfiguredCases = []misconfigured{
	{name: "healthy all", spec: "all"},
	{name: "healthy default", spec: "default"},
	{name: "healthy per_rollout", spec: "per_rollout"},
	{name: "model without server", spec: "all", off: map[string]string{"policy_model": gymsim.GroupServer},
		pairs: []string{svcAgent + " -> " + svcModel}, reason: "did not extract traceparent (server off in " + svcModel},
	{name: "model without server per_rollout", spec: "per_rollout", off: map[string]string{"policy_model": gymsim.GroupServer},
		pairs: []string{svcAgent + " -> " + svcModel}, reason: "did not extract traceparent (server off in " + svcModel},
	{name: "agent without http_client", spec: "all", off: map[string]string{"simple_agent": gymsim.GroupHTTPClient},
		pairs:  []string{svcAgent + " -> " + svcAgent, svcAgent + " -> " + svcModel, svcAgent + " -> " + svcResources},
		reason: "sent no traceparent (http_client off in " + svcAgent},
	{name: "agent without http_client default", spec: "default", off: map[string]string{"simple_agent": gymsim.GroupHTTPClient},
		pairs:  []string{svcAgent + " -> " + svcAgent, svcAgent + " -> " + svcModel, svcAgent + " -> " + svcResources},
		reason: "sent no traceparent (http_client off in " + svcAgent},
	{name: "resources without server", spec: "all", off: map[string]string{"example_single_tool_call": gymsim.GroupServer},
		pairs: []string{svcAgent + " -> " + svcResources}, reason: "did not extract traceparent (server off in " + svcResources},
	{name: "resources without server per_rollout", spec: "per_rollout", off: map[string]string{"example_single_tool_call": gymsim.GroupServer},
		pairs: []string{svcAgent + " -> " + svcResources}, reason: "did not extract traceparent (server off in " + svcResources},
	{name: "model without server default", spec: "default", off: map[string]string{"policy_model": gymsim.GroupServer},
		pairs: []string{svcAgent + " -> " + svcModel}, reason: "did not extract traceparent (server off in ", silent: svcModel},
	{name: "driver without http_client", spec: "all", off: map[string]string{"orchestrator": gymsim.GroupHTTPClient},
		pairs: []string{svcDriver + " -> " + svcAgent}, reason: "http_client", processLevel: true},
	{name: "driver without http_client obs", spec: "all", off: map[string]string{"orchestrator": gymsim.GroupHTTPClient},
		pairs: []string{svcDriver + " -> " + svcAgent}, reason: "http_client off in " + svcDriver, obs: true},
}

// runMisconfigured runs the case's fleet to completion, exporting real OTLP
// over gRPC to r, and returns its truth.
func runMisconfigured(t *testing.T, r *receiverUnderTest, seed int64, tc misconfigured) ([]gymsim.TruthSpan, map[string]string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	procs := map[string]string{}
	for name, g := range tc.off {
		procs[name] = without(tc.spec, g)
	}
	f, err := gymsim.Start(ctx, gymsim.Config{Seed: seed, Spec: tc.spec, ProcessSpecs: procs, Rollouts: rolloutsPerRun,
		Concurrency: 4, Protocol: "grpc", Endpoint: r.grpcAddr, RecordTruth: true, Observability: tc.obs || tc.silent != "", Latency: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	f.Wait()
	if err := f.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if st := f.Stats(); st.ExportErrors != 0 || st.Completed != rolloutsPerRun {
		t.Fatalf("fleet: %d export errors (%s), %d of %d rollouts completed", st.ExportErrors, st.LastExportError, st.Completed, rolloutsPerRun)
	}
	r.store.Sync()
	// host:port of each server, as a CLIENT span's URL names it.
	hosts := map[string]string{}
	for i, svc := range []string{svcAgent, svcModel, svcResources} {
		hosts[svc] = strings.TrimPrefix(f.Addrs()[i], "http://")
	}
	return f.Truth(), hosts
}

// without is spec's groups, as G1 resolves them, minus g.
func without(spec, g string) string {
	v, _ := gymsim.LookupVariant("G1")
	var out []string
	for name := range v.Resolve(spec).Groups {
		if name != g {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

// truthJoins derives from what the fleet really emitted the broken hops, as
// (from, to) services, and the rollouts they broke. A hop is broken where a
// call's callee started a new trace, or where a caller's CLIENT span got no
// child (it sent traceparent, the callee did not read it; the callee may
// have emitted nothing). A root is only a broken hop when its caller emits
// spans at all: a silent caller leaves nothing to join. The caller of a
// root is named by Gym's call graph: the driver calls the agent's /run
// (whose spans are the SERVER span or gym.rollout); the agent calls every
// other route, its own /v1/responses included. A rollout is split when its
// spans are in several traces or one of its hops broke, as the check
// defines it.
func truthJoins(truth []gymsim.TruthSpan) (split, pairs []string) {
	hasChild := map[trace.SpanID]bool{}
	emits := map[string]bool{}
	for _, s := range truth {
		hasChild[s.ParentID] = true
		emits[s.Service] = true
	}
	traces := map[string]map[trace.TraceID]bool{}
	broken := map[string]bool{}
	seen := map[string]bool{}
	for _, s := range truth {
		// Run-level traffic (probes, /aggregate_metrics) is no rollout's.
		if !s.IsRolloutTraffic() {
			continue
		}
		if s.RolloutID != "" {
			if traces[s.RolloutID] == nil {
				traces[s.RolloutID] = map[trace.TraceID]bool{}
			}
			traces[s.RolloutID][s.TraceID] = true
		}
		if s.Kind == trace.SpanKindClient && s.Callee != "" && !hasChild[s.SpanID] {
			seen[s.Service+" -> nemo-gym/"+s.Callee] = true
			broken[s.RolloutID] = true
		}
		if s.ParentID.IsValid() || s.Service == svcDriver {
			continue
		}
		from := svcAgent
		if s.Service == svcAgent && (s.Name == "POST /run" || s.Name == "gym.rollout") {
			from = svcDriver
		}
		if emits[from] {
			seen[from+" -> "+s.Service] = true
			broken[s.RolloutID] = true
		}
	}
	// Split, as Gym's captures define it: the rollout's spans carry more
	// than one trace id. A broken hop whose callee emitted nothing leaves
	// the rollout whole, but is still a hop to report.
	_ = broken
	for id, ts := range traces {
		if len(ts) > 1 {
			split = append(split, id)
		}
	}
	for p := range seen {
		pairs = append(pairs, p)
	}
	sort.Strings(split)
	sort.Strings(pairs)
	return split, pairs
}

// TestCheckFlagsMisconfiguredProcesses: for fleets where one process runs
// with a different span_groups than the others, the join check over the
// real capture reports exactly the rollouts that truly split and exactly the
// hops whose callee started a new trace, with a reason naming the fix.
func TestCheckFlagsMisconfiguredProcesses(t *testing.T) {
	for _, seed := range seeds(3, 8) {
		for _, tc := range misconfiguredCases {
			t.Run(fmt.Sprintf("seed=%d/%s", seed, tc.name), func(t *testing.T) {
				r := startReceiver(t)
				truth, hosts := runMisconfigured(t, r, seed, tc)
				snap := r.store.Snapshot()
				rep := whatif.NewEngine(reg).Check(snap, time.Now(), 0)
				t.Logf("intact=%v joined=%d split=%d pending=%d\n%s", rep.Intact, rep.Joined, rep.Split, rep.Pending, hopLines(rep.Hops))

				wantSplit, wantPairs := truthJoins(truth)
				if tc.silent != "" {
					for i, p := range wantPairs {
						wantPairs[i] = strings.Replace(p, "-> "+tc.silent, "-> "+hosts[tc.silent], 1)
					}
				}
				// The check names rollouts by Gym id or by one of their spans.
				bySpan := spansByID(truth)
				var gotSplit []string
				for id, rc := range rep.ByRollout {
					n, ok := truthRollout(id, bySpan)
					if !ok {
						t.Errorf("check reports rollout %q, which names no rollout of the fleet", id)
					}
					if rc.Status == whatif.Split {
						gotSplit = append(gotSplit, fmt.Sprintf("%d-0", n))
					}
				}
				sort.Strings(gotSplit)
				// A hop is reported with its caller, or, for a fragment no
				// CLIENT span can be matched to (several calls to the same
				// server at once), with the caller unknown: "? -> callee".
				truePair := map[string]bool{}
				trueCallee := map[string]bool{}
				for _, p := range wantPairs {
					truePair[p] = true
					trueCallee[strings.SplitN(p, " -> ", 2)[1]] = true
				}
				covered := map[string]bool{}
				for _, h := range rep.Hops {
					pair := h.FromService + " -> " + h.ToService
					switch {
					case truePair[pair]:
						covered[pair] = true
						if !strings.Contains(h.Reason, tc.reason) {
							t.Errorf("hop %s: reason %q does not say %q", pair, h.Reason, tc.reason)
						}
					case tc.processLevel && h.ToService == "" && strings.Contains(h.Reason, tc.reason):
						for p := range truePair {
							if strings.HasPrefix(p, h.FromService+" -> ") {
								covered[p] = true
							}
						}
					case h.FromService == "?" && trueCallee[h.ToService]:
						for p := range truePair {
							if strings.HasSuffix(p, " -> "+h.ToService) {
								covered[p] = true
							}
						}
						if !strings.Contains(h.Reason, "no CLIENT span can be matched") && !strings.Contains(h.Reason, "did not extract traceparent") {
							t.Errorf("hop %s: reason %q names no cause", pair, h.Reason)
						}
					default:
						t.Errorf("check reports broken hop %s (%s), not in the truth %q", pair, h.Reason, wantPairs)
					}
				}
				for _, p := range wantPairs {
					if !covered[p] {
						t.Errorf("broken hop %s not reported\n%s", p, hopLines(rep.Hops))
					}
				}
				if !reflect.DeepEqual(gotSplit, wantSplit) {
					t.Errorf("check reports split %q, truly split %q", gotSplit, wantSplit)
				}
				// The truth must show what the case is about, or the
				// comparison above proves nothing.
				casePairs := slices.Sorted(slices.Values(tc.pairs))
				if tc.silent != "" {
					for i, p := range casePairs {
						casePairs[i] = strings.Replace(p, "-> "+tc.silent, "-> "+hosts[tc.silent], 1)
					}
				}
				if !reflect.DeepEqual(wantPairs, casePairs) {
					t.Errorf("truth shows broken hops %q, the case expects %q", wantPairs, casePairs)
				}
				healthy := len(tc.off) == 0
				if rep.Intact != (len(wantSplit) == 0) || rep.Pending != 0 || rep.Rollouts != rolloutsPerRun {
					t.Errorf("intact %v pending %d rollouts %d; want intact %v, 0, %d", rep.Intact, rep.Pending, rep.Rollouts, len(wantSplit) == 0, rolloutsPerRun)
				}
				if healthy && rep.Joined != rolloutsPerRun {
					t.Errorf("healthy fleet: %d of %d rollouts joined", rep.Joined, rolloutsPerRun)
				}
			})
		}
	}
}

func hopLines(hops []whatif.BrokenHop) string {
	var b strings.Builder
	for _, h := range hops {
		fmt.Fprintf(&b, "  %s -> %s x%d: %s\n", h.FromService, h.ToService, h.Count, h.Reason)
	}
	return b.String()
}

// TestCheckPendingRightAfterStop: just after a misconfigured fleet stops,
// with a grace longer than the capture, every rollout is pending, none is
// broken or joined; past the grace the same snapshot shows them split.
func TestCheckPendingRightAfterStop(t *testing.T) {
	tc := misconfiguredCases[slices.IndexFunc(misconfiguredCases, func(c misconfigured) bool { return c.name == "model without server" })]
	for _, seed := range seeds(1, 3) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			r := startReceiver(t)
			truth, _ := runMisconfigured(t, r, seed, tc)
			snap := r.store.Snapshot()
			eng := whatif.NewEngine(reg)
			rep := eng.Check(snap, snap.Taken, time.Hour)
			t.Logf("within grace: intact=%v joined=%d split=%d pending=%d\n%s", rep.Intact, rep.Joined, rep.Split, rep.Pending, hopLines(rep.Hops))
			if rep.Pending != rolloutsPerRun || rep.Split != 0 || rep.Joined != 0 {
				t.Errorf("within grace: pending %d split %d joined %d, want %d, 0, 0", rep.Pending, rep.Split, rep.Joined, rolloutsPerRun)
			}
			for id, rc := range rep.ByRollout {
				if rc.Status != whatif.JoinPending {
					t.Errorf("rollout %s: %v within grace, want pending", id, rc.Status)
				}
			}
			if len(rep.Hops) != 0 || !rep.Intact {
				t.Errorf("within grace, pending rollouts are reported broken:\n%s", hopLines(rep.Hops))
			}
			wantSplit, _ := truthJoins(truth)
			rep = eng.Check(snap, snap.Taken.Add(time.Hour+time.Second), time.Hour)
			if rep.Pending != 0 || rep.Split != len(wantSplit) || len(wantSplit) == 0 {
				t.Errorf("past grace: pending %d split %d, want 0, %d (truth)", rep.Pending, rep.Split, len(wantSplit))
			}
		})
	}
}
