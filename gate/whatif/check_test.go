package whatif

import (
	"fmt"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/nemo-gym/gymtrace/model"
)

func hopStrings(hops []BrokenHop) []string {
	var out []string
	for _, h := range hops {
		out = append(out, fmt.Sprintf("%s -> %s (%s) x%d: %s", h.FromService, h.ToService, h.SpanName, h.Count, h.Reason))
	}
	sort.Strings(out)
	return out
}

func TestCheck(t *testing.T) {
	const n = 2
	cases := []struct {
		name        string
		job         bool
		mod         func(*fleet)
		intact      bool
		joined      int
		split       int
		hops        []string
		splitFrags  bool
		processHops bool
	}{
		{name: "healthy with job", job: true, intact: true, joined: n},
		{name: "healthy without job", intact: true, joined: n},
		{name: "healthy with two CLIENT spans per hop", job: true, intact: true, joined: n,
			mod: func(f *fleet) { f.DoubleClient = true }},
		{
			// The model process does not extract: no SERVER spans there, its
			// handler spans start their own traces. The agent's unanswered
			// CLIENT spans and the model's new roots are one broken hop,
			// reported once, from the side that names both processes.
			name: "model did not extract", mod: func(f *fleet) { f.NoServer = map[string]bool{"model": true} },
			split: n,
			hops: []string{
				"nemo-gym/agent -> nemo-gym/model (POST /v1/responses) x4: " + fmt.Sprintf(reasonNoServerChild, "nemo-gym/model"),
			},
		},
		{
			// Neither side of the agent's calls joins, and the model does
			// not extract either: with no CLIENT span to pair them with, the
			// model's new roots are reported as such.
			name: "agent sent nothing and model did not extract",
			mod: func(f *fleet) {
				f.Cut = func(caller, callee string) bool { return caller == "agent" }
				f.NoClient = map[string]bool{"agent": true}
				f.NoServer = map[string]bool{"model": true}
			},
			split: n,
			hops: []string{
				"? -> nemo-gym/model (gym.model.responses) x4: " + fmt.Sprintf(reasonNewTrace, "gym.model.responses", "nemo-gym/model"),
				"nemo-gym/agent -> nemo-gym/agent (POST /v1/responses) x4: " + fmt.Sprintf(reasonServerRoot, "nemo-gym/agent"),
				"nemo-gym/agent -> nemo-gym/resources (POST /run_code) x2: " + fmt.Sprintf(reasonServerRoot, "nemo-gym/agent"),
				"nemo-gym/agent -> nemo-gym/resources (POST /verify) x2: " + fmt.Sprintf(reasonServerRoot, "nemo-gym/agent"),
			},
		},
		{
			// The agent sends no traceparent to the resources server: its
			// CLIENT spans exist, the callee's SERVER spans are roots.
			name: "agent did not inject", job: true,
			mod: func(f *fleet) {
				f.Cut = func(caller, callee string) bool { return caller == "agent" && callee == "resources" }
			},
			split: n,
			hops: []string{
				"nemo-gym/agent -> nemo-gym/resources (POST /run_code) x2: " + reasonNotInjected,
				"nemo-gym/agent -> nemo-gym/resources (POST /verify) x2: " + reasonNotInjected,
			},
		},
		{
			// The agent has http_client off: no CLIENT spans, no traceparent,
			// the callees' SERVER spans are roots.
			name: "agent sent no traceparent", job: true,
			mod: func(f *fleet) {
				f.Cut = func(caller, callee string) bool { return caller == "agent" }
				f.NoClient = map[string]bool{"agent": true}
			},
			split: n,
			hops: []string{
				"nemo-gym/agent -> nemo-gym/agent (POST /v1/responses) x4: " + fmt.Sprintf(reasonServerRoot, "nemo-gym/agent"),
				"nemo-gym/agent -> nemo-gym/model (POST /v1/responses) x4: " + fmt.Sprintf(reasonServerRoot, "nemo-gym/agent"),
				"nemo-gym/agent -> nemo-gym/resources (POST /run_code) x2: " + fmt.Sprintf(reasonServerRoot, "nemo-gym/agent"),
				"nemo-gym/agent -> nemo-gym/resources (POST /verify) x2: " + fmt.Sprintf(reasonServerRoot, "nemo-gym/agent"),
			},
		},
		{
			// The driver has http_client off: its gym.job span is captured,
			// but every /run call starts a trace of its own.
			name: "driver sent no traceparent", job: true,
			mod: func(f *fleet) {
				f.Cut = func(caller, callee string) bool { return caller == "rollout_collection" }
				f.NoClient = map[string]bool{"rollout_collection": true}
			},
			// Each rollout's spans are one trace (only gym.job stands
			// apart): joined, with the hop that missed the job reported.
			joined: n, intact: true,
			hops: []string{
				fmt.Sprintf("nemo-gym/rollout_collection -> nemo-gym/agent (POST /run) x%d: ", n) + fmt.Sprintf(reasonServerRoot, "nemo-gym/rollout_collection"),
			},
		},
		{
			// A server only ever called from outside the fleet: its one-span
			// trace is no rollout's, and the process joins no one.
			name: "process outside every trace", job: true,
			mod: func(f *fleet) {
				f.NewTrace()
				f.Add(model.SpanID{}, "nemo-gym/judge", "POST /judge", model.KindServer)
			},
			joined: n, intact: true,
			hops: []string{"nemo-gym/judge ->  () x1: " + reasonProcessNoJoins},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			snap := gymCapture(t, n, 2, 1, tc.job, tc.mod)
			rep := NewEngine(g1c()).Check(snap, time.Now(), 0)
			if rep.Intact != tc.intact || rep.Joined != tc.joined || rep.Split != tc.split || rep.Pending != 0 {
				t.Errorf("intact %v joined %d split %d pending %d, want %v %d %d 0", rep.Intact, rep.Joined, rep.Split, rep.Pending, tc.intact, tc.joined, tc.split)
			}
			if got := hopStrings(rep.Hops); !reflect.DeepEqual(got, tc.hops) {
				t.Errorf("hops:\n%q\nwant\n%q", got, tc.hops)
			}
			if len(rep.ByRollout) != rep.Rollouts || rep.Rollouts != n {
				t.Errorf("by rollout: %d entries for %d rollouts, want %d", len(rep.ByRollout), rep.Rollouts, n)
			}
		})
	}
}

func TestCheckGrace(t *testing.T) {
	now := time.Unix(1_000, 0)
	clock := now
	st := model.NewStore(model.Options{Now: func() time.Time { return clock }})
	defer st.Close()
	f := newFleet(t, st)
	f.NoServer = map[string]bool{"model": true}
	f.Rollout(model.SpanID{}, "old", 1, 0)
	f.Flush()
	clock = now.Add(10 * time.Second)
	f.Rollout(model.SpanID{}, "fresh", 1, 0)
	snap := f.Flush()
	e := NewEngine(g1c())

	rep := e.Check(snap, clock.Add(time.Second), 5*time.Second)
	if rep.Pending != 1 || rep.Split != 1 || rep.ByRollout["fresh"].Status != JoinPending || rep.ByRollout["old"].Status != Split {
		t.Errorf("within grace: pending %d split %d, fresh %v old %v; want 1, 1, pending, split",
			rep.Pending, rep.Split, rep.ByRollout["fresh"].Status, rep.ByRollout["old"].Status)
	}
	if len(rep.ByRollout["fresh"].Hops) == 0 {
		t.Error("a pending rollout should still show what looks broken")
	}
	rep = e.Check(snap, clock.Add(6*time.Second), 5*time.Second)
	if rep.Pending != 0 || rep.Split != 2 || rep.Intact {
		t.Errorf("after grace: pending %d split %d intact %v; want 0, 2, false", rep.Pending, rep.Split, rep.Intact)
	}
}

// A rollout whose /run call the driver retried hangs under the job twice:
// two fragments, one trace, joined.
func TestCheckRetriedRun(t *testing.T) {
	st := model.NewStore(model.Options{})
	defer st.Close()
	f := newFleet(t, st)
	f.NewTrace()
	j := f.Add(model.SpanID{}, "nemo-gym/rollout_collection", "gym.job", model.KindInternal)
	f.Rollout(j, "r", 1, 0)
	f.Rollout(j, "r", 1, 0)
	snap := f.Flush()
	if len(snap.Rollouts) != 1 || len(snap.Rollouts[0].Fragments) != 2 {
		t.Fatalf("%d rollouts, want 1 with 2 fragments", len(snap.Rollouts))
	}
	rep := NewEngine(g1c()).Check(snap, time.Now(), 0)
	if !rep.Intact || rep.Joined != 1 {
		t.Errorf("intact %v joined %d hops %q; want true, 1, none", rep.Intact, rep.Joined, hopStrings(rep.Hops))
	}
	if pr := NewEngine(g1c()).Preview(snap, mustParse(t, "all")); pr.Result.Traces != 1 || pr.Result.RolloutsJoined != 1 {
		t.Errorf("preview all: %d traces, %d joined; want 1, 1", pr.Result.Traces, pr.Result.RolloutsJoined)
	}
}

// An orphan (a fragment whose parent never arrived) is reported as such; its
// rollout stays joined, since all its spans carry one trace id.
func TestCheckOrphan(t *testing.T) {
	st := model.NewStore(model.Options{})
	defer st.Close()
	f := newFleet(t, st)
	f.Rollout(model.SpanID{}, "r", 2, 0)
	// Drop the agent's first CLIENT span that calls the model: its SERVER
	// child waits for a parent that never comes.
	for i, sp := range f.Spans.Spans {
		if st.Interner().Str(sp.Name) == "HTTP POST" && i > 0 {
			next := f.Spans.Spans[i+1]
			if st.Interner().Str(next.Name) == "POST /v1/responses" && next.Resource == f.Resource("nemo-gym/model") {
				f.Spans.Spans = append(f.Spans.Spans[:i:i], f.Spans.Spans[i+1:]...)
				f.Spans.Traces = append(f.Spans.Traces[:i:i], f.Spans.Traces[i+1:]...)
				f.Spans.Parents = append(f.Spans.Parents[:i:i], f.Spans.Parents[i+1:]...)
				break
			}
		}
	}
	snap := f.Flush()
	rep := NewEngine(g1c()).Check(snap, time.Now(), 0)
	want := []string{"? -> nemo-gym/model (POST /v1/responses) x1: " + fmt.Sprintf(reasonParentMissing, "SERVER")}
	if got := hopStrings(rep.Hops); !reflect.DeepEqual(got, want) || rep.Split != 0 || rep.Joined != 1 || !rep.Intact {
		t.Errorf("hops %q split %d joined %d, want %q, 0, 1", got, rep.Split, rep.Joined, want)
	}
}

// A process with server off is known by no SERVER span's host. Where its
// spans start new traces during a call, the call names it; a rollout in
// which it emitted nothing is joined: all its spans carry one trace id.
func TestCheckNamesSilentCallee(t *testing.T) {
	st := model.NewStore(model.Options{})
	defer st.Close()
	f := newFleet(t, st)
	f.NoServer = map[string]bool{"resources": true}
	f.Rollout(model.SpanID{}, "loud", 1, 1)
	f.NewTrace()
	f.Call(model.SpanID{}, "rollout_collection", "agent", "/run", "", func(run model.SpanID) {
		r := f.Add(run, "nemo-gym/agent", "gym.rollout", model.KindInternal, kv{K: model.RolloutIDKey, V: "quiet"})
		f.Call(r, "agent", "resources", "/get_weather", "quiet", nil)
	})
	snap := f.Flush()
	rep := NewEngine(g1c()).Check(snap, time.Now(), 0)
	want := []string{
		"nemo-gym/agent -> nemo-gym/resources (POST /get_weather) x1: " + fmt.Sprintf(reasonNoServerChild, "nemo-gym/resources"),
		"nemo-gym/agent -> nemo-gym/resources (POST /run_code) x1: " + fmt.Sprintf(reasonNoServerChild, "nemo-gym/resources"),
		"nemo-gym/agent -> nemo-gym/resources (POST /verify) x1: " + fmt.Sprintf(reasonNoServerChild, "nemo-gym/resources"),
	}
	if got := hopStrings(rep.Hops); !reflect.DeepEqual(got, want) {
		t.Errorf("hops:\n%q\nwant\n%q", got, want)
	}
	quiet := rep.ByRollout["quiet"]
	if quiet.Status != Joined || len(quiet.Hops) != 1 || quiet.Hops[0].ToService != "nemo-gym/resources" {
		t.Errorf("quiet rollout: %v %q, want joined, with its one hop to nemo-gym/resources", quiet.Status, hopStrings(quiet.Hops))
	}
}

// Within the grace, a process whose spans have not joined yet is not
// reported as never joining: its callers' spans may still be on the way.
func TestCheckPendingNamesNoProcess(t *testing.T) {
	now := time.Now()
	snap := gymCapture(t, 2, 2, 1, true, func(f *fleet) { f.NoServer = map[string]bool{"model": true} })
	e := NewEngine(g1c())
	rep := e.Check(snap, now, time.Hour)
	if rep.Pending != 2 || rep.Split != 0 || len(rep.Hops) != 0 {
		t.Errorf("within grace: pending %d split %d hops %q; want 2, 0, none", rep.Pending, rep.Split, hopStrings(rep.Hops))
	}
	rep = e.Check(snap, now.Add(2*time.Hour), time.Hour)
	if rep.Pending != 0 || rep.Split != 2 || len(rep.Hops) == 0 {
		t.Errorf("past grace: pending %d split %d hops %q; want 0, 2, some", rep.Pending, rep.Split, hopStrings(rep.Hops))
	}
}
