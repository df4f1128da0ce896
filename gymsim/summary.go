package gymsim

import (
	"sort"
	"strings"

	"go.opentelemetry.io/otel/trace"
)

// Summary is what a run's truth says a tool should find, computed as the
// real captures' summary.json is: rollouts are the fleet's own, run-level
// traffic apart.
type Summary struct {
	Spans          int `json:"spans"`
	Traces         int `json:"traces"`
	Rollouts       int `json:"rollouts"`
	RolloutsJoined int `json:"rollouts_joined"`
	RolloutsSplit  int `json:"rollouts_split"`
	RolloutSpans   int `json:"rollout_spans"`
	// NonRolloutSpans are the run-level spans: health probes,
	// /aggregate_metrics, gym.job, start-up trees.
	NonRolloutSpans int `json:"non_rollout_spans"`
	// NonRolloutTraces are the traces holding no rollout span.
	NonRolloutTraces int               `json:"non_rollout_traces"`
	SpansPerRollout  Percentiles       `json:"spans_per_rollout"`
	PerService       map[string]int    `json:"per_service"`
	PerGroup         map[string]int    `json:"per_group"`
	LeakedSpans      int               `json:"leaked_server_spans"`
	PerRollout       map[string]PerRun `json:"per_rollout"`
}

// Percentiles are nearest-rank percentiles over real rollouts.
type Percentiles struct {
	P50 int `json:"p50"`
	P99 int `json:"p99"`
	Max int `json:"max"`
}

// PerRun is one rollout's part of a Summary.
type PerRun struct {
	Spans  int  `json:"spans"`
	Traces int  `json:"traces"`
	Joined bool `json:"joined"`
}

// IsLeaked reports a request span the keep-alive carry-over created
// INTERNAL under the previous request's span.
func (s *TruthSpan) IsLeaked() bool {
	return s.Group == GroupServer && s.Kind == trace.SpanKindInternal &&
		!strings.HasSuffix(s.Name, " http send") && !strings.HasSuffix(s.Name, " http receive")
}

// Summarize computes the Summary of a truth.
func Summarize(spans []TruthSpan) Summary {
	sum := Summary{Spans: len(spans), PerService: map[string]int{}, PerGroup: map[string]int{}, PerRollout: map[string]PerRun{}}
	traces := map[trace.TraceID]bool{}
	rolloutTraces := map[trace.TraceID]bool{}
	per := map[int]map[trace.TraceID]bool{}
	ids := map[int]string{}
	sizes := map[int]int{}
	for i := range spans {
		s := &spans[i]
		traces[s.TraceID] = true
		sum.PerService[s.Service]++
		sum.PerGroup[s.Group]++
		if s.IsLeaked() {
			sum.LeakedSpans++
		}
		if !s.IsRolloutTraffic() {
			sum.NonRolloutSpans++
			continue
		}
		sum.RolloutSpans++
		rolloutTraces[s.TraceID] = true
		if per[s.Rollout] == nil {
			per[s.Rollout] = map[trace.TraceID]bool{}
		}
		per[s.Rollout][s.TraceID] = true
		sizes[s.Rollout]++
		ids[s.Rollout] = s.RolloutID
	}
	sum.Traces = len(traces)
	for t := range traces {
		if !rolloutTraces[t] {
			sum.NonRolloutTraces++
		}
	}
	var vals []int
	for r, ts := range per {
		joined := len(ts) == 1
		sum.Rollouts++
		if joined {
			sum.RolloutsJoined++
		} else {
			sum.RolloutsSplit++
		}
		id := ids[r]
		if id == "" { // a truth read back from a file, which keeps no ids
			id = rolloutID(r, 1)
		}
		sum.PerRollout[id] = PerRun{Spans: sizes[r], Traces: len(ts), Joined: joined}
		vals = append(vals, sizes[r])
	}
	sort.Ints(vals)
	sum.SpansPerRollout = Percentiles{P50: nearestRank(vals, 50), P99: nearestRank(vals, 99)}
	if len(vals) > 0 {
		sum.SpansPerRollout.Max = vals[len(vals)-1]
	}
	return sum
}

// nearestRank is the q-th percentile of sorted vals by nearest rank.
func nearestRank(vals []int, q int) int {
	if len(vals) == 0 {
		return 0
	}
	k := (len(vals)*q + 99) / 100
	if k < 1 {
		k = 1
	}
	return vals[k-1]
}
