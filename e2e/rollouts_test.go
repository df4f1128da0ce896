package e2e

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nemo-gym/gymtrace/gate/whatif"
	"github.com/nemo-gym/gymtrace/gymsim"
)

// gymID is Gym's rollout id, <task>-<repeat>.
var gymID = regexp.MustCompile(`^(\d+)-\d+$`)

// truthRollout maps a rollout id gymtrace reports to the fleet's rollout: a
// Gym id names its task; any other id must name one of the rollout's spans
// as ~<anything>/<span id>. -1 and false when it names run-level traffic or
// nothing the fleet emitted.
func truthRollout(id string, bySpan map[string]*gymsim.TruthSpan) (int, bool) {
	if m := gymID.FindStringSubmatch(id); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n, true
	}
	i := strings.LastIndexByte(id, '/')
	if !strings.HasPrefix(id, "~") || i < 0 {
		return -1, false
	}
	s, ok := bySpan[id[i+1:]]
	if !ok || !s.IsRolloutTraffic() {
		return -1, false
	}
	return s.Rollout, true
}

func spansByID(truth []gymsim.TruthSpan) map[string]*gymsim.TruthSpan {
	out := make(map[string]*gymsim.TruthSpan, len(truth))
	for i := range truth {
		out[truth[i].SpanID.String()] = &truth[i]
	}
	return out
}

// checkCases are the settings the join check must get right: the specs of
// the real captures, and observability, aiohttp, carried-over contexts and
// processes that read another span_groups, with the specs where they bite.
var checkCases = []gymsim.Config{
	{Spec: "all"}, {Spec: "default"}, {Spec: "per_rollout"}, {Spec: "server,rollout,verify"},
	{Spec: "all", Observability: true}, {Spec: "per_rollout", Observability: true},
	{Spec: "all", AIOHTTP: true}, {Spec: "server,rollout,verify", AIOHTTP: true},
	{Spec: "all", ContextLeak: 0.1}, {Spec: "per_rollout", ContextLeak: 0.1},
	{Spec: "default", Standalone: true},
	{Spec: "all", ProcessSpecs: map[string]string{"policy_model": "model_call,rollout"}},
	{Spec: "default", ProcessSpecs: map[string]string{"simple_agent": "server,rollout"}},
}

// TestCheckMatchesTruth: over ten seeds and every check case, the join
// check over the fleet's real OTLP finds the fleet's rollouts and nothing
// else (health probes, /aggregate_metrics, gym.job are run-level traffic),
// joined and split exactly as the truth has them, every reported rollout
// naming one real rollout.
func TestCheckMatchesTruth(t *testing.T) {
	for i, seed := range seeds(2, 10) {
		for j, c := range checkCases {
			protocol := []string{"grpc", "http"}[(i+j)%2]
			t.Run(fmt.Sprintf("seed=%d/%s", seed, caseName(c)), func(t *testing.T) {
				r := startReceiver(t)
				c.Seed = seed
				truth := runFleet(t, r, protocol, c)
				sum := gymsim.Summarize(truth)
				rep := whatif.NewEngine(reg).Check(r.store.Snapshot(), time.Now(), 0)
				if rep.Spans != sum.Spans || rep.Traces != sum.Traces {
					t.Errorf("check: %d spans, %d traces; fleet %d, %d", rep.Spans, rep.Traces, sum.Spans, sum.Traces)
				}
				if rep.Rollouts != sum.Rollouts || rep.Joined != sum.RolloutsJoined || rep.Split != sum.RolloutsSplit {
					t.Errorf("check: %d rollouts, %d joined, %d split; fleet %d, %d, %d",
						rep.Rollouts, rep.Joined, rep.Split, sum.Rollouts, sum.RolloutsJoined, sum.RolloutsSplit)
				}
				bySpan := spansByID(truth)
				seen := map[int]string{}
				var gotSplit, wantSplit []int
				for id, rc := range rep.ByRollout {
					n, ok := truthRollout(id, bySpan)
					if !ok {
						t.Errorf("check reports rollout %q, which names no rollout of the fleet", id)
						continue
					}
					if prev, dup := seen[n]; dup {
						t.Errorf("rollout %d reported twice, as %q and %q", n, prev, id)
					}
					seen[n] = id
					if rc.Status == whatif.Split {
						gotSplit = append(gotSplit, n)
					}
				}
				for id, pr := range sum.PerRollout {
					if !pr.Joined {
						n, _ := truthRollout(id, nil)
						wantSplit = append(wantSplit, n)
					}
				}
				sort.Ints(gotSplit)
				sort.Ints(wantSplit)
				if !slices.Equal(gotSplit, wantSplit) {
					t.Errorf("check splits rollouts %v, truly split %v", gotSplit, wantSplit)
				}
			})
		}
	}
}

var predictionSpecs = []string{"default", "per_rollout", "all", "server,http_client,verify", "server,rollout,verify", "http_client,rollout", "default,sandbox"}

// TestPreviewPredictsFleet: the what-if preview of a spec computed from an
// `all` capture equals what the fleet really emits under that spec with the
// same seed and switches: spans, traces, and per real rollout the kept
// spans and joined/split.
func TestPreviewPredictsFleet(t *testing.T) {
	switches := []gymsim.Config{{}, {Observability: true}, {AIOHTTP: true}}
	for i, seed := range seeds(3, 10) {
		sw := switches[i%len(switches)]
		t.Run(fmt.Sprintf("seed=%d/%s", seed, caseName(sw)), func(t *testing.T) {
			r := startReceiver(t)
			capCfg := sw
			capCfg.Seed, capCfg.Spec = seed, "all"
			capTruth := runFleet(t, r, []string{"grpc", "http"}[i%2], capCfg)
			bySpan := spansByID(capTruth)
			snap := r.store.Snapshot()
			eng := whatif.NewEngine(reg)
			for _, spec := range predictionSpecs {
				t.Run("spec="+spec, func(t *testing.T) {
					rep := eng.Preview(snap, parse(t, spec))
					runCfg := sw
					runCfg.Seed, runCfg.Spec = seed, spec
					truth := runFleet(t, nil, "none", runCfg)
					if diff := comparePreview(rep, bySpan, truth); diff != "" {
						t.Errorf("preview of %q from the all capture differs from what the fleet emits:\n%s", spec, diff)
					}
				})
			}
		})
	}
}

// comparePreview lists every difference between a preview and the truth
// of the run under its spec; the preview's rollouts are named through the
// capture's truth (bySpan).
func comparePreview(rep *whatif.Report, bySpan map[string]*gymsim.TruthSpan, truth []gymsim.TruthSpan) string {
	var diffs []string
	add := func(format string, args ...any) { diffs = append(diffs, fmt.Sprintf(format, args...)) }
	sum := gymsim.Summarize(truth)
	if rep.Result.Spans != sum.Spans {
		add("spans: preview %d, fleet %d", rep.Result.Spans, sum.Spans)
	}
	if rep.Result.Traces != sum.Traces {
		add("traces: preview %d, fleet %d", rep.Result.Traces, sum.Traces)
	}
	kept := map[int]int{}
	joined := map[int]bool{}
	for _, rr := range rep.PerRollout {
		n, ok := truthRollout(rr.ID, bySpan)
		if !ok {
			add("preview rollout %q names no rollout of the fleet", rr.ID)
			continue
		}
		if _, dup := kept[n]; dup {
			add("rollout %d appears twice in the preview", n)
		}
		kept[n] += rr.Spans
		joined[n] = rr.Joined
	}
	for id, pr := range sum.PerRollout {
		n, _ := truthRollout(id, nil)
		if kept[n] != pr.Spans {
			add("rollout %s: preview keeps %d spans, fleet emits %d", id, kept[n], pr.Spans)
		}
		if joined[n] != pr.Joined {
			add("rollout %s: preview joined=%v, fleet traces=%d", id, joined[n], pr.Traces)
		}
		delete(kept, n)
	}
	for n, k := range kept {
		if k > 0 {
			add("rollout %d: the preview keeps %d spans, the fleet emits none", n, k)
		}
	}
	sort.Strings(diffs)
	return strings.Join(diffs, "\n")
}
