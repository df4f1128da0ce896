package rollouts

import (
	"fmt"
	"reflect"
	"sort"
	"testing"

	"github.com/nemo-gym/gymtrace/model"
)

// jobLog records what a finder tells of the spans in gym.job's place.
type jobLog struct{ calls []string }

func (j *jobLog) VirtualJob(id model.SpanID, res model.ResourceID) {
	j.calls = append(j.calls, fmt.Sprintf("virtual %x %d", id, res))
}

func (j *jobLog) CallerJob(id model.SpanID, f *model.Fragment, span int32) {
	j.calls = append(j.calls, fmt.Sprintf("caller %x %x %d", id, f.Spans[span].SpanID, span))
}

// TestLiveFinderMatchesFresh follows a run as it arrives (rollouts one
// batch each, gym.job last) with one finder kept across snapshots, and
// checks each structure and every job span it tells of against a fresh
// finder's on the same snapshot, and against one that keeps every dangling
// call from the start (a finder keeps them once a structure matches one).
func TestLiveFinderMatchesFresh(t *testing.T) {
	noAgentServer := func(f *fleet) { f.NoServer = map[string]bool{"agent": true} }
	for _, tc := range []struct {
		name string
		mod  func(*fleet)
		late func(*fleet) // applied from the 10th rollout on
	}{
		{"joined", nil, nil},
		{"cut to model", func(f *fleet) { f.Cut = func(_, callee string) bool { return callee == "model" } }, nil},
		{"no server in agent", noAgentServer, nil},
		{"no server in resources", func(f *fleet) { f.NoServer = map[string]bool{"resources": true} }, nil},
		{"no server in agent from the 10th", nil, noAgentServer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := model.NewStore(model.Options{QueueLen: 4})
			t.Cleanup(st.Close)
			f := newFleet(t, st)
			if tc.mod != nil {
				tc.mod(f)
			}
			f.NewTrace()
			job := f.Add(model.SpanID{}, "nemo-gym/rollout_collection", "gym.job", model.KindInternal)
			jobSpan, jobTrace := f.Spans.Spans[len(f.Spans.Spans)-1], f.Spans.Traces[len(f.Spans.Traces)-1]
			f.Spans = model.Batch{}
			f.Eager = true
			live, liveJobs := NewFinder(), &jobLog{}
			live.Jobs = liveJobs
			var prev map[string]*model.Rollout
			check := func(step string) {
				st.Sync()
				snap := st.Snapshot()
				liveJobs.calls = nil
				got := live.Structure(snap)
				// A rollout the last structure held, unchanged, is reused.
				now := map[string]*model.Rollout{}
				for _, r := range got.Rollouts {
					now[r.ID] = r
					if p := prev[r.ID]; p != nil && p.Version == r.Version && p != r {
						t.Fatalf("%s: rollout %s rebuilt, unchanged", step, r.ID)
					}
				}
				prev = now
				fresh, freshJobs := NewFinder(), &jobLog{}
				fresh.Jobs = freshJobs
				want := fresh.Structure(snap)
				eager := NewFinder()
				eager.sync(snap)
				eager.keepCalls = true
				if all := eager.Structure(snap); !reflect.DeepEqual(all.Snap.Rollouts, want.Snap.Rollouts) ||
					!reflect.DeepEqual(all.Unattributed, want.Unattributed) || all.Attributed != want.Attributed {
					t.Fatalf("%s: structure with every call kept differs: %d rollouts %d attributed, fresh %d %d",
						step, len(all.Snap.Rollouts), all.Attributed, len(want.Snap.Rollouts), want.Attributed)
				}
				if !reflect.DeepEqual(got.Snap.Rollouts, want.Snap.Rollouts) || !reflect.DeepEqual(got.Run, want.Run) ||
					!reflect.DeepEqual(got.Unattributed, want.Unattributed) || !reflect.DeepEqual(got.Leaks, want.Leaks) ||
					!reflect.DeepEqual(got.Suspect, want.Suspect) || got.Attributed != want.Attributed ||
					got.RunSpans != want.RunSpans || got.RunTraces != want.RunTraces || got.RolloutTraces != want.RolloutTraces {
					t.Fatalf("%s: live structure differs: %d rollouts %d attributed, fresh %d %d",
						step, len(got.Snap.Rollouts), got.Attributed, len(want.Snap.Rollouts), want.Attributed)
				}
				sort.Strings(liveJobs.calls)
				sort.Strings(freshJobs.calls)
				if !reflect.DeepEqual(liveJobs.calls, freshJobs.calls) {
					t.Fatalf("%s: live finder told of %d job spans, fresh of %d", step, len(liveJobs.calls), len(freshJobs.calls))
				}
			}
			for i := 0; i < 40; i++ {
				if i == 10 && tc.late != nil {
					if live.keepCalls {
						t.Fatal("calls kept before any unit needed one")
					}
					tc.late(f)
				}
				f.Rollout(job, fmt.Sprintf("r-%d", i), 2, 2)
				if i%7 == 3 {
					check(fmt.Sprintf("after %d rollouts", i+1))
					check("again") // the same snapshot's copy: every rollout reused
				}
			}
			check("all rollouts")
			if err := st.Add(model.Batch{Spans: []model.Span{jobSpan}, Traces: []model.TraceID{jobTrace}}); err != nil {
				t.Fatal(err)
			}
			check("job span in")
			if tc.late != nil && !live.keepCalls {
				t.Fatal("no call kept after units needed them")
			}
		})
	}
}
