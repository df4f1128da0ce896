package whatif

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/nemo-gym/gymtrace/gate/rollouts"
)

// TestCutCausesAreBreaks: each span a preview cuts carries its break's
// cause, the one the rollout's breaks count it under: per process, span
// name and cause, the cut spans number what the breaks say, on every
// real-Gym capture under specs that break hops for each reason.
func TestCutCausesAreBreaks(t *testing.T) {
	dirs, _ := filepath.Glob("../../testdata/real-gym/*/*")
	if len(dirs) < 10 {
		t.Fatalf("%d captures", len(dirs))
	}
	specs := []string{"default", "per_rollout", "server,rollout,verify", "http_client,rollout", "rollout,verify"}
	causesSeen := map[Cause]int{}
	for _, dir := range dirs {
		snap, reg := realSnap(t, dir)
		e := NewEngine(reg)
		rolls := e.Structure(snap).Rollouts
		for _, s := range specs {
			spec, err := reg.Parse(s)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rolls {
				sim := e.SimulateRollout(snap, r, spec)
				type key struct {
					svc, name string
					c         Cause
				}
				cut, want := map[key]int{}, map[key]int{}
				for fi, f := range r.Fragments {
					for i := range f.Spans {
						if c := sim.Frags[fi].Cut[i]; c != CauseNone {
							sp := &f.Spans[i]
							cut[key{snap.ServiceName(sp.Resource), rollouts.DisplayName(snap.Interner(), sp), c}]++
							causesSeen[c]++
						}
					}
				}
				for _, b := range sim.Breaks {
					want[key{b.ToService, b.SpanName, b.Cause}] += b.Count
				}
				if fmt.Sprint(cut) != fmt.Sprint(want) {
					t.Errorf("%s %s %s: cut spans %v, breaks %v", dir, s, r.ID, cut, want)
				}
			}
		}
	}
	t.Logf("%d captures, cut: %v", len(dirs), causesSeen)
	for _, c := range []Cause{CauseNoClient, CauseNoServer, CauseNeither, CauseCarried} {
		if causesSeen[c] == 0 {
			t.Errorf("no span cut for %s: %v", c.Code(), causesSeen)
		}
	}
}

// TestSpecCause: what a spec has off of server and http_client is why its
// hops break, and a spec with both on breaks none.
func TestSpecCause(t *testing.T) {
	for spec, want := range map[string]Cause{
		"all": CauseNone, "server,http_client": CauseNone, "server,rollout": CauseNoClient,
		"http_client,rollout": CauseNoServer, "rollout,verify": CauseNeither,
	} {
		if got := SpecCause(mustParse(t, spec)); got != want {
			t.Errorf("%s: %s, want %s", spec, got.Code(), want.Code())
		}
	}
}
