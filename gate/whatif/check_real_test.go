package whatif

import (
	"fmt"
	"github.com/nemo-gym/gymtrace/gate/groups"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/nemo-gym/gymtrace/gate/rollouts"
	"github.com/nemo-gym/gymtrace/model"
	"github.com/nemo-gym/gymtrace/receiver"
)

const realGymDir = "../../testdata/real-gym"

// realCheck reads one case of real Gym's captures and checks it with the
// variant the capture shows.
func realCheck(t *testing.T, dir string) *CheckReport {
	t.Helper()
	snap, reg := realSnap(t, dir)
	return NewEngine(reg).Check(snap, time.Now(), 0)
}

// realSnap reads one case of real Gym's captures, with the registry of the
// variant it shows.
func realSnap(t *testing.T, dir string) (*model.Snapshot, *groups.Registry) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "console", "*"))
	if len(files) == 0 {
		files, _ = filepath.Glob(filepath.Join(dir, "otlp", "*"))
	}
	if len(files) == 0 {
		t.Fatalf("%s: no capture files", dir)
	}
	st := model.NewStore(model.Options{})
	t.Cleanup(st.Close)
	if _, err := receiver.ReadFiles(st, files, receiver.ReadOptions{}); err != nil {
		t.Fatalf("%s: %v", dir, err)
	}
	st.Sync()
	snap := st.Snapshot()
	v, _ := groups.DetectVariant(snap)
	return snap, v.Registry()
}

// TestTallyIsCheckTally: the tally without per-rollout verdicts counts as
// the check's own, live (now inside the grace of the last spans, so some
// rollouts are pending) and after, on a fresh engine and on one that
// checked the capture before.
func TestTallyIsCheckTally(t *testing.T) {
	for _, c := range []string{"s41-obs0-iso/all", "s41-obs0-leak/all", "s61-rl-iso/rl-all"} {
		snap, reg := realSnap(t, filepath.Join(realGymDir, c))
		last := int64(0)
		for _, r := range snap.Rollouts {
			last = max(last, r.LastSeen)
		}
		for _, now := range []time.Time{time.Unix(0, last).Add(LiveGrace / 2), time.Unix(0, last).Add(time.Hour)} {
			want := NewEngine(reg).Check(snap, now, LiveGrace).Tally(now, JobQuiet)
			if want.Rollouts == 0 || (now.UnixNano() < last+int64(LiveGrace) && want.Pending == 0) {
				t.Fatalf("%s at %v: %+v: no rollouts, or none pending inside the grace", c, now, want)
			}
			if got := NewEngine(reg).Tally(snap, now, LiveGrace, JobQuiet); got != want {
				t.Errorf("%s at %v: Tally %+v, want Check's %+v", c, now, got, want)
			}
			eng := NewEngine(reg)
			eng.Check(snap, now.Add(-time.Minute), LiveGrace)
			if got := eng.Tally(snap, now, LiveGrace, JobQuiet); got != want {
				t.Errorf("%s at %v, engine used before: Tally %+v, want %+v", c, now, got, want)
			}
		}
	}
}

// TestCheckNamesCaptureHop: in real Gym's run whose model server read no
// traceparent, the one broken hop is named by caller, callee and the call's
// span, counted in spans and rollouts, in the report and in every split
// rollout's own reason.
func TestCheckNamesCaptureHop(t *testing.T) {
	rep := realCheck(t, filepath.Join(realGymDir, "s41-obs0-iso", "broken-model"))
	want := BrokenHop{FromService: "nemo-gym/simple_agent", ToService: "nemo-gym/policy_model", SpanName: "POST /v1/responses",
		Cause: CauseNoServerChild, Args: [2]string{"nemo-gym/policy_model"},
		Reason: fmt.Sprintf(reasonNoServerChild, "nemo-gym/policy_model"), Count: 43, Rollouts: 20}
	if len(rep.Hops) != 1 || rep.Hops[0] != want {
		t.Fatalf("hops %+v, want only %+v", rep.Hops, want)
	}
	sum := rep.HopSummary()
	if len(sum) != 1 || sum[0] != (BreakSum{FromService: want.FromService, ToService: want.ToService, SpanName: want.SpanName,
		Reason: want.Reason, Cause: want.Cause, Args: want.Args, Rollouts: 20, Spans: 43}) {
		t.Errorf("summary %+v", sum)
	}
	if got := HopName(sum[0], "->", func(s string) string { return s }); got != "nemo-gym/simple_agent -> nemo-gym/policy_model (POST /v1/responses)" {
		t.Errorf("hop name %q", got)
	}
	if rep.Split != 20 {
		t.Fatalf("%d split, want 20", rep.Split)
	}
	for id, rc := range rep.ByRollout {
		if rc.Status != Split || len(rc.Hops) != 1 || rc.Hops[0].SpanName != want.SpanName || rc.Hops[0].ToService != want.ToService {
			t.Errorf("rollout %s: %v %+v, want split by the hop to the model", id, rc.Status, rc.Hops)
		}
	}
}

// TestCheckHopsCounted: over every real capture, the report lists each hop
// once, counted as the rollouts' own findings add up, and names the span of
// every hop between processes.
func TestCheckHopsCounted(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join(realGymDir, "*", "*", "meta.json"))
	if len(dirs) < 10 {
		t.Fatalf("%d real-Gym cases, want the repository's", len(dirs))
	}
	for _, m := range dirs {
		dir := filepath.Dir(m)
		name, _ := filepath.Rel(realGymDir, dir)
		t.Run(name, func(t *testing.T) {
			rep := realCheck(t, dir)
			spans, rollouts := map[BrokenHop]int{}, map[BrokenHop]int{}
			for _, rc := range rep.ByRollout {
				for _, h := range rc.Hops {
					k := BrokenHop{FromService: h.FromService, ToService: h.ToService, SpanName: h.SpanName, Reason: h.Reason}
					spans[k] += h.Count
					rollouts[k]++
				}
			}
			seen := map[BrokenHop]bool{}
			for _, h := range rep.Hops {
				k := BrokenHop{FromService: h.FromService, ToService: h.ToService, SpanName: h.SpanName, Reason: h.Reason}
				if seen[k] {
					t.Errorf("hop listed twice: %+v", k)
				}
				seen[k] = true
				if h.Reason == reasonProcessNoJoins {
					continue
				}
				if h.SpanName == "" {
					t.Errorf("hop %s -> %s names no span: %s", h.FromService, h.ToService, h.Reason)
				}
				if h.Count != spans[k] || h.Rollouts != rollouts[k] {
					t.Errorf("hop %+v: %d spans in %d rollouts, the rollouts add up to %d in %d", k, h.Count, h.Rollouts, spans[k], rollouts[k])
				}
			}
		})
	}
}

// TestCheckLeaksAddUp: over every real capture, the context-leak hops count
// every leak of the structure once, the run-level request put under a
// rollout's span (/aggregate_metrics in the leak capture under
// per_rollout) among them, so the hops and the context-leak figure agree.
func TestCheckLeaksAddUp(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join(realGymDir, "*", "*", "meta.json"))
	total := 0
	for _, m := range dirs {
		dir := filepath.Dir(m)
		name, _ := filepath.Rel(realGymDir, dir)
		rep := realCheck(t, dir)
		want := rep.Structure.Traffic().LeakSpans
		got, runLevel := 0, false
		for _, h := range rep.Hops {
			if h.Cause == CauseLeak {
				got += h.Count
				runLevel = runLevel || h.SpanName == "POST /aggregate_metrics"
			}
		}
		if got != want {
			t.Errorf("%s: leak hops count %d spans, the structure %d leaks", name, got, want)
		}
		if name == "s41-obs0-leak/spec-per_rollout" && !runLevel {
			t.Errorf("%s: the leaked /aggregate_metrics is in no hop: %v", name, hopStrings(rep.Hops))
		}
		total += want
	}
	if total == 0 {
		t.Fatal("no real capture leaks: the leak captures are missing")
	}
}

// TestLeaksByRollout: a leak is its own rollout's, else the rollout it was
// put under, else loose; none is dropped.
func TestLeaksByRollout(t *testing.T) {
	st := &rollouts.Structure{Leaks: []rollouts.Leak{
		{Service: "agent", Name: "POST /run", Rollout: "r1", Host: "r2"},
		{Service: "agent", Name: "POST /run", Rollout: "r1", Host: "r1"},
		{Service: "agent", Name: "POST /aggregate_metrics", Host: "r2"},
		{Service: "agent", Name: "POST /aggregate_metrics"},
	}}
	tb := checkTables{leaksIn: map[string][]leakCount{}}
	tb.leaksByRollout(st)
	want := map[string][]leakCount{
		"r1": {{svc: "agent", name: "POST /run", n: 2}},
		"r2": {{svc: "agent", name: "POST /aggregate_metrics", n: 1}},
	}
	if !reflect.DeepEqual(tb.leaksIn, want) {
		t.Errorf("leaks by rollout %+v, want %+v", tb.leaksIn, want)
	}
	if loose := []leakCount{{svc: "agent", name: "POST /aggregate_metrics", n: 1}}; !reflect.DeepEqual(tb.looseLeaks, loose) {
		t.Errorf("loose leaks %+v, want %+v", tb.looseLeaks, loose)
	}
}

// TestLeakSpansInTheirRollout: each leak of the leak capture names its
// request span, found in the rollout it belongs to, so a view can mark it.
func TestLeakSpansInTheirRollout(t *testing.T) {
	rep := realCheck(t, filepath.Join(realGymDir, "s41-obs0-leak", "all"))
	byID := map[string]*model.Rollout{}
	for _, r := range rep.Structure.Rollouts {
		byID[r.ID] = r
	}
	if len(rep.Structure.Leaks) == 0 {
		t.Fatal("no leaks in the leak capture")
	}
	for _, l := range rep.Structure.Leaks {
		r := byID[l.Rollout]
		found := false
		for _, f := range r.Fragments {
			for i := range f.Spans {
				found = found || f.Spans[i].SpanID == l.Span && rep.Structure.Snap.ServiceName(f.Spans[i].Resource) == l.Service
			}
		}
		if !found {
			t.Errorf("leak %+v: its span is not in rollout %q", l, l.Rollout)
		}
	}
}
