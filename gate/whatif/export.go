package whatif

import (
	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/model"
)

// ExportSpans returns the spans of the given rollouts, parents before
// children, ready to be written out: with spec nil exactly as captured
// (ids, parents, everything), together with the gym.job spans they hang
// under; with a spec, as the preview sees them under it. Then only kept
// spans remain, each reparented to its nearest kept ancestor; a span whose
// link up crosses a hop the spec breaks, or that has no kept ancestor left,
// starts a trace of its own, with a trace id derived from the old one and
// its span id (stable from run to run), so a tool reading the export counts
// the traces the preview counts. A job span is exported when the spec keeps
// it and a kept span hangs under it.
//
// The returned spans are copies, each with its trace id (as exported);
// their Parent indexes are not meaningful.
func (e *Engine) ExportSpans(snap *model.Snapshot, rollouts []*model.Rollout, spec *groups.Set) model.Batch {
	e.sync(snap)
	jobs := map[model.SpanID]*model.Fragment{}
	for _, j := range snap.Jobs {
		jobs[j.Spans[0].SpanID] = j
	}
	var out model.Batch
	var carried []int // spans of out in another rollout's trace (FlagCarried)
	usedJob := map[model.SpanID]bool{}
	var jobOrder []model.SpanID
	useJob := func(id model.SpanID) {
		if !usedJob[id] {
			usedJob[id] = true
			jobOrder = append(jobOrder, id)
		}
	}
	for _, r := range rollouts {
		if spec == nil {
			for _, f := range r.Fragments {
				if _, ok := jobs[f.Job()]; ok && !f.Job().IsZero() {
					useJob(f.Job())
				}
				for i := range f.Spans {
					out.Append(f.Trace(i), f.ParentID(i), f.Spans[i])
				}
			}
			continue
		}
		sim := e.SimulateRollout(snap, r, *spec)
		for fi, f := range r.Fragments {
			fs := &sim.Frags[fi]
			jobKept := false
			if j, ok := jobs[f.Job()]; ok && !f.Job().IsZero() {
				jobKept = spec.Has(e.jobs[j.Spans[0].SpanID].group)
			}
			trace := make([]model.TraceID, len(f.Spans))
			for i := range f.Spans {
				if !fs.Kept[i] {
					continue
				}
				sp, tid, up := f.Spans[i], f.Trace(i), f.ParentID(i)
				switch p := fs.Parent[i]; {
				case p >= 0:
					up, tid = f.Spans[p].SpanID, trace[p]
				case fs.Cut[i] != CauseNone && sp.Flags()&model.FlagCarried != 0:
					// It stays under the span it was captured under, in
					// that span's trace (set once every span is out).
					carried = append(carried, len(out.Spans))
				case fs.Cut[i] != CauseNone:
					up, tid = model.SpanID{}, derivedTrace(tid, sp.SpanID)
				case jobKept && noKeptAncestor(f, fs, i):
					up = f.Job()
					useJob(f.Job())
				case i == 0 && f.Job().IsZero():
					// The fragment's own top: a root, or an orphan whose
					// parent never arrived; it stays as captured.
				default:
					// Every ancestor is dropped: the span starts a trace.
					up, tid = model.SpanID{}, derivedTrace(tid, sp.SpanID)
				}
				trace[i] = tid
				out.Append(tid, up, sp)
			}
		}
	}
	inCarriedTrace(out, carried)
	if len(jobOrder) == 0 {
		return out
	}
	var head model.Batch
	for _, id := range jobOrder {
		head.Append(jobs[id].TraceID, jobs[id].TopParent, jobs[id].Spans[0])
	}
	head.AppendBatch(out)
	return head
}

// Pieces returns the rollouts gate finds by structure, then run-level
// traffic and fragments no rollout claims, each as a one-fragment rollout:
// every span of snap but the gym.job spans, each once.
func (e *Engine) Pieces(snap *model.Snapshot) []*model.Rollout {
	st := e.Structure(snap)
	rolls := append([]*model.Rollout(nil), st.Rollouts...)
	st.ForOthers(func(r *model.Rollout) { rolls = append(rolls, r) })
	return rolls
}

// ExportAll returns every span of snap shaped as ExportSpans does: the
// rollouts gate finds by structure, the run's gym.job spans (under a spec,
// those it keeps), run-level traffic and fragments no rollout claims.
func (e *Engine) ExportAll(snap *model.Snapshot, spec *groups.Set) model.Batch {
	spans := e.ExportSpans(e.Structure(snap).Snap, e.Pieces(snap), spec)
	// Jobs no exported span hangs under are exported too.
	have := map[model.SpanID]bool{}
	for i := range spans.Spans {
		have[spans.Spans[i].SpanID] = true
	}
	var jobs model.Batch
	for _, j := range snap.Jobs {
		sp := j.Spans[0]
		if !have[sp.SpanID] && (spec == nil || groups.Kept(e.jobs[sp.SpanID].group, *spec)) {
			jobs.Append(j.TraceID, j.TopParent, sp)
		}
	}
	jobs.AppendBatch(spans)
	return jobs
}

// noKeptAncestor reports whether no ancestor of span i within the fragment
// is kept, so that its nearest kept ancestor is the fragment's job span.
func noKeptAncestor(f *model.Fragment, fs *FragSim, i int) bool {
	for p := f.Spans[i].Parent; p >= 0 && int(p) < i; p = f.Spans[p].Parent {
		if fs.Kept[p] {
			return false
		}
	}
	return true
}

// derivedTrace is the trace id a span gets when it starts a new trace under
// a spec: the old trace's first half and the span id mixed into the second,
// so ids differ per new root and are the same in every export.
func derivedTrace(t model.TraceID, s model.SpanID) model.TraceID {
	for i := range s {
		t[8+i] ^= s[i] ^ 0x5a
	}
	return t
}

// inCarriedTrace puts each carried span (indexes into b) in the trace its
// captured parent is exported in, and its descendants with it; one whose
// parent is not exported starts a trace of its own. A carried span's parent
// may lie in another carried subtree, exported before or after it, so every
// span's trace is settled by walking up its parents in b.
func inCarriedTrace(b model.Batch, carried []int) {
	if len(carried) == 0 {
		return
	}
	out, traces, parents := b.Spans, b.Traces, b.Parents
	at := make(map[model.SpanID]int, len(out))
	for i := range out {
		at[out[i].SpanID] = i
	}
	for _, c := range carried {
		if _, ok := at[parents[c]]; !ok {
			parents[c], traces[c] = model.SpanID{}, derivedTrace(traces[c], out[c].SpanID)
		}
	}
	const (
		unsettled = iota
		walking
		settled
	)
	state := make([]uint8, len(out))
	var path []int
	for i := range out {
		// Walk up to a settled span or a top, then give the path its trace.
		path = path[:0]
		j := i
		for state[j] == unsettled {
			state[j] = walking
			path = append(path, j)
			p, ok := at[parents[j]]
			if !ok {
				break
			}
			j = p
		}
		trace := traces[j] // a top's own, or a settled span's; a loop keeps its first
		for k := len(path) - 1; k >= 0; k-- {
			traces[path[k]] = trace
			state[path[k]] = settled
		}
	}
}
