package model

// Select returns a snapshot holding only the given rollouts (a subset of
// s.Rollouts, in the order given) and every gym.job span, with the span,
// rollout, fragment, trace and per-process counts recomputed for what it
// holds. The receive counters (accepted, refused, evicted, metrics) stay
// those of s: they describe the capture, not the selection. Like s, the
// result is immutable and shares its rollouts with s.
func (s *Snapshot) Select(rollouts []*Rollout) *Snapshot {
	out := *s
	out.Rollouts = rollouts
	out.Services = make([]int64, len(s.Services))
	traces := map[TraceID]struct{}{}
	stored, frags := 0, 0
	count := func(f *Fragment) {
		traces[f.TraceID] = struct{}{}
		stored += len(f.Spans)
		for i := range f.Spans {
			if id := int(f.Spans[i].Resource); id < len(out.Services) {
				out.Services[id]++
			}
		}
	}
	for _, j := range s.Jobs {
		count(j)
	}
	for _, r := range rollouts {
		for _, f := range r.Fragments {
			count(f)
			frags++
		}
	}
	out.Stats.Stored = stored
	out.Stats.Rollouts = len(rollouts)
	out.Stats.Fragments = frags
	out.Stats.Traces = len(traces)
	return &out
}
