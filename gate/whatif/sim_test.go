package whatif

import (
	"fmt"
	"github.com/nemo-gym/gymtrace/gate/groups"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/nemo-gym/gymtrace/model"
)

func mustParse(t testing.TB, spec string) groups.Set {
	t.Helper()
	s, err := g1c().Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// gymSpans is the span count of one fleet rollout, from the shape alone.
func gymSpans(turns, tools int) (spans, calls int) {
	calls = 1 + 2*turns + tools + 1
	// Each call: CLIENT, SERVER and 3 ASGI spans; then gym.rollout, agent
	// and model spans per turn, verify, and one sandbox span with tools.
	spans = calls*5 + 1 + 2*turns + 1
	if tools > 0 {
		spans++
	}
	return spans, calls
}

func TestPreviewWhatIf(t *testing.T) {
	const n, turns, tools = 3, 2, 2
	per, calls := gymSpans(turns, tools)
	type want struct {
		spans, traces, joined, split, perRollout, rolloutTraces, largest int
	}
	cases := []struct {
		name string
		job  bool
		spec string
		want want
	}{
		{"all/job on: every rollout in the job's trace", true, "all",
			want{1 + n*per, 1, n, 0, per, 1, 1 + n*per}},
		{"per_rollout/one trace per rollout", true, "per_rollout",
			want{n * (per - 1), n, n, 0, per - 1, 1, per - 1}},
		{"default/job on: one trace", true, "default",
			want{1 + n*(calls*5+1), 1, n, 0, calls*5 + 1, 1, 1 + n*(calls*5+1)}},
		// http_client off: every SERVER span (one per call, even the agent's
		// call to itself) starts a new trace; the job stays alone.
		{"http_client off/split at every hop", true, "job,server,rollout,agent,model_call,verify,sandbox",
			want{1 + n*(per-calls), 1 + n*calls, 0, n, per - calls, calls, 5}},
		// server off: the handler spans directly under each SERVER span start
		// new traces; the driver's CLIENT stays under the job.
		{"server off/split at every hop", true, "job,http_client,rollout,agent,model_call,verify,sandbox",
			want{1 + n*(calls+1+2*turns+2), 1 + n*(1+2*turns+2), 0, n, calls + 1 + 2*turns + 2, 1 + 1 + 2*turns + 2, 1 + turns + tools + 1}},
		{"both off/no job", false, "rollout,agent,model_call,verify,sandbox",
			want{n * (1 + 2*turns + 2), n * (1 + 2*turns + 2), 0, n, 1 + 2*turns + 2, 1 + 2*turns + 2, 1}},
		{"job only/no rollout spans kept", true, "job",
			want{1, 1, 0, 0, 0, 0, 1}},
		{"no job captured/all", false, "all",
			want{n * per, n, n, 0, per, 1, per}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			snap := gymCapture(t, n, turns, tools, tc.job, nil)
			rep := NewEngine(g1c()).Preview(snap, mustParse(t, tc.spec))
			got := want{rep.Result.Spans, rep.Result.Traces, rep.Result.RolloutsJoined, rep.Result.RolloutsSplit, rep.Result.Max, 0, rep.Result.LargestTrace}
			for _, r := range rep.PerRollout {
				if r.Spans != got.perRollout || r.Traces != rep.PerRollout[0].Traces {
					t.Errorf("rollout %s: spans %d traces %d, want all alike", r.ID, r.Spans, r.Traces)
				}
			}
			if len(rep.PerRollout) != n {
				t.Fatalf("rollouts = %d, want %d", len(rep.PerRollout), n)
			}
			got.rolloutTraces = rep.PerRollout[0].Traces
			if got != tc.want {
				t.Errorf("Preview(%q) = %+v, want %+v", tc.spec, got, tc.want)
			}
			if rep.Result.Dropped != rep.Input.Spans-rep.Result.Spans {
				t.Errorf("dropped %d, want %d", rep.Result.Dropped, rep.Input.Spans-rep.Result.Spans)
			}
		})
	}
}

// A second CLIENT span per hop (aiohttp instrumentation, unclassified and
// so always kept) changes counts, not joins.
func TestPreviewDoubleClient(t *testing.T) {
	const n, turns, tools = 2, 1, 1
	per, calls := gymSpans(turns, tools)
	snap := gymCapture(t, n, turns, tools, true, func(f *fleet) { f.DoubleClient = true })
	e := NewEngine(g1c())
	rep := e.Preview(snap, mustParse(t, "per_rollout"))
	if want := n * (per - 1 + calls); rep.Result.Spans != want || rep.Result.Traces != n || rep.Result.RolloutsJoined != n {
		t.Errorf("per_rollout: %d spans in %d traces, %d joined; want %d in %d, %d", rep.Result.Spans, rep.Result.Traces, rep.Result.RolloutsJoined, want, n, n)
	}
	ungated := 0
	for _, gc := range rep.PerGroup {
		if gc.Group == groups.Ungated {
			ungated = gc.Captured
		}
	}
	if ungated != n*calls || rep.Input.Unclassified != 0 {
		t.Errorf("ungated = %d, unclassified %d, want %d (the inner CLIENT spans), 0", ungated, rep.Input.Unclassified, n*calls)
	}
	// Without http_client, Gym's own CLIENT spans are gone, but the aiohttp
	// instrumentation still injects traceparent: every hop stays joined, and
	// each rollout (no job kept) is a trace of its own.
	rep = e.Preview(snap, mustParse(t, "server,rollout"))
	if rep.Result.Traces != n || rep.Result.RolloutsJoined != n {
		t.Errorf("server,rollout: %d traces, %d joined, want %d, %d", rep.Result.Traces, rep.Result.RolloutsJoined, n, n)
	}
	// Without server nothing extracts it: every callee splits off.
	rep = e.Preview(snap, mustParse(t, "http_client,rollout"))
	if rep.Result.RolloutsSplit != n {
		t.Errorf("http_client,rollout: %d split, want %d", rep.Result.RolloutsSplit, n)
	}
}

func TestPreviewBreaks(t *testing.T) {
	snap := gymCapture(t, 1, 1, 0, false, nil)
	rep := NewEngine(g1c()).Preview(snap, mustParse(t, "server,rollout,agent,model_call,verify"))
	got := map[string]int{}
	for _, b := range rep.PerRollout[0].Breaks {
		got[fmt.Sprintf("%s -> %s %s: %s", b.FromService, b.ToService, b.SpanName, b.Reason)] += b.Count
	}
	want := map[string]int{
		"nemo-gym/agent -> nemo-gym/agent POST /v1/responses: " + reasonNoClient: 1,
		"nemo-gym/agent -> nemo-gym/model POST /v1/responses: " + reasonNoClient: 1,
		"nemo-gym/agent -> nemo-gym/resources POST /verify: " + reasonNoClient:   1,
	}
	// The driver's call to /run is not a break: nothing kept above it.
	if !reflect.DeepEqual(got, want) {
		t.Errorf("breaks = %v\nwant %v", got, want)
	}
}

func TestPreviewGroupsAndGaps(t *testing.T) {
	const turns, tools = 1, 1
	per, _ := gymSpans(turns, tools)
	snap := gymCapture(t, 2, turns, tools, false, nil)
	rep := NewEngine(g1c()).Preview(snap, mustParse(t, "default,sandbox,step"))
	if got, want := g1c().Names(groups.Set(0).With(groups.Job)), []string{"job"}; !reflect.DeepEqual(got, want) {
		t.Fatal(got)
	}
	var notIn, none []string
	for _, g := range rep.NotInCapture {
		notIn = append(notIn, g1c().Name(g))
	}
	for _, g := range rep.NoSpans {
		none = append(none, g1c().Name(g))
	}
	if !reflect.DeepEqual(notIn, []string{"job"}) || !reflect.DeepEqual(none, []string{"step"}) {
		t.Errorf("not in capture %v, no spans %v; want [job], [step]", notIn, none)
	}
	counts := map[groups.Group]GroupCount{}
	for _, gc := range rep.PerGroup {
		counts[gc.Group] = gc
	}
	if c := counts[groups.Sandbox]; c.Captured != 2 || c.Kept != 2 {
		t.Errorf("sandbox = %+v, want 2 captured, 2 kept", c)
	}
	if c := counts[groups.ModelCall]; c.Captured != 2*turns || c.Kept != 0 {
		t.Errorf("model_call = %+v, want %d captured, 0 kept", c, 2*turns)
	}
	sum := 0
	for _, gc := range rep.PerRollout[0].Groups {
		sum += gc.Captured
	}
	if sum != per {
		t.Errorf("rollout groups sum to %d captured, want %d", sum, per)
	}
	if rep.Result.Bytes <= 0 || rep.WallSeconds <= 0 || rep.Result.SpansPerSecond <= 0 {
		t.Errorf("bytes %d wall %v rate %v, want all > 0", rep.Result.Bytes, rep.WallSeconds, rep.Result.SpansPerSecond)
	}
	spans, bytes := rep.Project(200)
	if spans != rep.Result.Spans*100 || bytes != rep.Result.Bytes*100 {
		t.Errorf("Project(200) = %d, %d; want 100x of %d, %d", spans, bytes, rep.Result.Spans, rep.Result.Bytes)
	}
}

func TestSimulateRollout(t *testing.T) {
	snap := gymCapture(t, 1, 1, 0, false, nil)
	r := snap.Rollouts[0]
	in := snap.Interner()
	sim := NewEngine(g1c()).SimulateRollout(snap, r, mustParse(t, "http_client,rollout,agent,model_call"))
	if len(sim.Frags) != 1 {
		t.Fatalf("frags = %d, want 1", len(sim.Frags))
	}
	f, fs := r.Fragments[0], sim.Frags[0]
	var got []string
	for i, sp := range f.Spans {
		if !fs.Kept[i] {
			continue
		}
		parent := "-"
		if p := fs.Parent[i]; p >= 0 {
			parent = in.Str(f.Spans[p].Name)
		}
		cut := ""
		if fs.Cut[i] != CauseNone {
			cut = " (cut)"
		}
		got = append(got, fmt.Sprintf("%s@%s <- %s%s", in.Str(sp.Name), snap.ServiceName(sp.Resource), parent, cut))
	}
	want := []string{
		"HTTP POST@nemo-gym/rollout_collection <- -",
		"gym.rollout@nemo-gym/agent <- - (cut)",
		"HTTP POST@nemo-gym/agent <- gym.rollout",
		"gym.agent.responses@nemo-gym/agent <- - (cut)",
		"HTTP POST@nemo-gym/agent <- gym.agent.responses",
		"gym.model.responses@nemo-gym/model <- - (cut)",
		"HTTP POST@nemo-gym/agent <- gym.rollout",
	}
	sort.Strings(got)
	sort.Strings(want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("kept spans:\n%q\nwant\n%q", got, want)
	}
	if sim.Traces != 4 || sim.Joined {
		t.Errorf("traces %d joined %v, want 4, false", sim.Traces, sim.Joined)
	}
}

func TestPreviewCache(t *testing.T) {
	snap := gymCapture(t, 4, 1, 1, true, nil)
	e := NewEngine(g1c())
	specs := []string{"all", "per_rollout", "all", "default", "default,checkpoint", "http_client,server", "all"}
	for _, spec := range specs {
		got := e.Preview(snap, mustParse(t, spec))
		want := NewEngine(g1c()).Preview(snap, mustParse(t, spec))
		if !reflect.DeepEqual(got, want) {
			t.Errorf("cached Preview(%q) differs from a fresh engine's:\n%+v\nwant\n%+v", spec, got.Result, want.Result)
		}
	}
	// A group no rollout contains does not change the cached result.
	r := snap.Rollouts[0]
	before := e.sim(snap, r, e.rolls[r.ID], mustParse(t, "default"))
	after := e.sim(snap, r, e.rolls[r.ID], mustParse(t, "default,checkpoint"))
	if before != after {
		t.Error("toggling a group absent from the rollout recomputed it")
	}
	if other := e.sim(snap, r, e.rolls[r.ID], mustParse(t, "default,verify")); other == before {
		t.Error("toggling a group present in the rollout reused the cached result")
	}
}

func TestPreviewEvicts(t *testing.T) {
	st := model.NewStore(model.Options{MaxSpans: 500})
	defer st.Close()
	f := newFleet(t, st)
	e := NewEngine(g1c())
	for i := 0; i < 10; i++ {
		f.Rollout(model.SpanID{}, fmt.Sprintf("r-%d", i), 2, 2)
		snap := f.Flush()
		e.Preview(snap, mustParse(t, "all"))
		if len(e.rolls) != len(snap.Rollouts) {
			t.Fatalf("after %d rollouts: %d cached, snapshot holds %d", i+1, len(e.rolls), len(snap.Rollouts))
		}
		live := 0
		for _, r := range snap.Rollouts {
			live += len(r.Fragments)
		}
		if len(e.frags) != live {
			t.Fatalf("after %d rollouts: %d fragments cached, snapshot holds %d", i+1, len(e.frags), live)
		}
	}
}

// The engine reads snapshots while the store's writer keeps applying
// batches: run with -race. Every preview must account for exactly the
// spans of the snapshot it was given.
func TestPreviewWhileWriting(t *testing.T) {
	st := model.NewStore(model.Options{PublishEvery: time.Millisecond})
	defer st.Close()
	f := newFleet(t, st)
	f.Eager = true
	done := make(chan struct{})
	go func() {
		defer close(done)
		j := f.Add(model.SpanID{}, "nemo-gym/rollout_collection", "gym.job", model.KindInternal)
		for i := 0; i < 200; i++ {
			f.Rollout(j, fmt.Sprintf("r-%d", i), 2, 2)
		}
	}()
	e := NewEngine(g1c())
	specs := []groups.Set{mustParse(t, "all"), mustParse(t, "per_rollout"), mustParse(t, "default")}
	for i := 0; ; i++ {
		select {
		case <-done:
			st.Sync()
			rep := e.Preview(st.Snapshot(), specs[0])
			if rep.Result.Spans != rep.Input.Spans || rep.Result.Traces != 1 {
				t.Errorf("final: kept %d of %d spans in %d traces, want all in 1", rep.Result.Spans, rep.Input.Spans, rep.Result.Traces)
			}
			return
		default:
		}
		snap := st.Snapshot()
		rep := e.Preview(snap, specs[i%len(specs)])
		if rep.Result.Spans+rep.Result.Dropped != snap.Stats.Stored {
			t.Fatalf("kept %d + dropped %d != stored %d", rep.Result.Spans, rep.Result.Dropped, snap.Stats.Stored)
		}
		e.Check(snap, time.Now(), time.Second)
		if len(snap.Rollouts) > 0 {
			e.SimulateRollout(snap, snap.Rollouts[len(snap.Rollouts)-1], specs[0])
		}
	}
}
