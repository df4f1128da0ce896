package whatif

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nemo-gym/gymtrace/model"
)

// TestCheckJudgedStaysJudged follows a run in the order exporters send it:
// each rollout's spans children first as it ends, the driver's gym.job
// last, then a late call under the job. A rollout judged once keeps its
// verdict while its own spans stay the same, whatever arrives beside it:
// the job span that links every rollout into one trace must not make them
// all pending again.
func TestCheckJudgedStaysJudged(t *testing.T) {
	for _, tc := range []struct {
		name string
		rid  func(i int) string
	}{
		{"rollout ids", func(i int) string { return fmt.Sprintf("r-%d", i) }},
		{"no ids", func(int) string { return "" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var clockNS atomic.Int64 // the writer reads it on its goroutine
			clockNS.Store(time.Unix(1_000, 0).UnixNano())
			clock := func() time.Time { return time.Unix(0, clockNS.Load()) }
			tick := func(d time.Duration) { clockNS.Add(int64(d)) }
			st := model.NewStore(model.Options{Now: clock})
			t.Cleanup(st.Close)
			f := newFleet(t, st)
			f.NewTrace()
			job := f.Add(model.SpanID{}, "nemo-gym/rollout_collection", "gym.job", model.KindInternal)
			jobSpan := model.Batch{}
			jobSpan.Append(f.Spans.Traces[0], model.SpanID{}, f.Spans.Spans[0])
			f.Spans = model.Batch{}
			e := NewEngine(g1c())
			judged := map[string]JoinStatus{} // rollout -> its verdict once judged
			spans := map[string]int{}
			check := func(step string) *CheckReport {
				t.Helper()
				st.Sync()
				rep := e.Check(st.Snapshot(), clock(), LiveGrace)
				for _, r := range rep.Structure.Snap.Rollouts {
					got := rep.ByRollout[r.ID].Status
					if was, ok := judged[r.ID]; ok && spans[r.ID] == r.Spans && got != was {
						t.Fatalf("%s: rollout %s went from %v to %v, its %d spans unchanged (joined %d split %d pending %d)",
							step, r.ID, was, got, r.Spans, rep.Joined, rep.Split, rep.Pending)
					}
					if got != JoinPending {
						judged[r.ID] = got
					} else {
						delete(judged, r.ID)
					}
					spans[r.ID] = r.Spans
				}
				return rep
			}
			const n = 30
			for i := 0; i < n; i++ {
				f.Rollout(job, tc.rid(i), 2, 2)
				f.Flush()
				tick(time.Second)
				check(fmt.Sprintf("rollout %d", i))
			}
			tick(LiveGrace)
			if rep := check("all rollouts, grace passed"); rep.Joined != n {
				t.Fatalf("all rollouts in, grace passed: joined %d, want %d", rep.Joined, n)
			}
			if err := st.Add(jobSpan); err != nil {
				t.Fatal(err)
			}
			tick(time.Second)
			if rep := check("job span in"); rep.Joined != n {
				t.Fatalf("job span in: joined %d pending %d, want %d joined", rep.Joined, rep.Pending, n)
			}
			// A call under the job after it (aggregate_metrics) is run-level:
			// no rollout's spans change.
			f.Call(job, "rollout_collection", "agent", "/aggregate_metrics", "", nil)
			f.Flush()
			tick(time.Second)
			if rep := check("late call under the job"); rep.Joined != n {
				t.Fatalf("late call under the job: joined %d pending %d, want %d joined", rep.Joined, rep.Pending, n)
			}
		})
	}
}
