package advise

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gate/internal/realgym"
	"github.com/nemo-gym/gymtrace/gate/whatif"
	"github.com/nemo-gym/gymtrace/model"
	"github.com/nemo-gym/gymtrace/receiver"
)

// TestRecommendIsReference: over a store read in two parts (a first
// snapshot with some processes' spans, then all of them: every rollout
// changes), under many budgets and constraints, the search answers field
// for field as the reference search (every spec that fits previewed) on a
// fresh engine does: without a cache on an engine that searched before,
// and with one cache kept across all the searches and both snapshots.
func TestRecommendIsReference(t *testing.T) {
	opts := []Options{
		{RunnersUp: 3},
		{RunnersUp: 0},
		{RunnersUp: 20, AllowSplits: true},
		{RunnersUp: 3, Must: 1 << groups.Verify},
		{RunnersUp: 5, Never: 1<<groups.Sandbox | 1<<groups.Job},
		{RunnersUp: 2, Rate: 3.5},
		{RunnersUp: -1},
	}
	for _, name := range realAll {
		files := realgym.Files(t, name)
		reg := func() *groups.Registry { eng, _ := realgym.Capture(t, name); return eng.Registry() }()
		st := model.NewStore(model.Options{})
		t.Cleanup(st.Close)
		eng, plain := whatif.NewEngine(reg), whatif.NewEngine(reg)
		var cache Cache
		searched := 0
		for part, fs := range [][]string{files[:len(files)/2], files[len(files)/2:]} {
			if _, err := receiver.ReadFiles(st, fs, receiver.ReadOptions{}); err != nil {
				t.Fatal(err)
			}
			st.Sync()
			snap := st.Snapshot()
			for bi, bs := range budgets {
				if part == 0 && bi%2 == 1 {
					// Half the budgets on the first snapshot: the reference
					// previews every spec, and the race detector slows it.
					continue
				}
				for oi, opt := range opts {
					opt.Budget = mustBudget(t, bs)
					want, err := refRecommend(whatif.NewEngine(reg), snap, opt)
					if err != nil {
						t.Fatal(err)
					}
					got, err := cache.Recommend(eng, snap, opt)
					if err != nil {
						t.Fatal(err)
					}
					alone, err := Recommend(plain, snap, opt)
					if err != nil {
						t.Fatal(err)
					}
					where := fmt.Sprintf("%s part %d, %s, options %d", name, part, bs, oi)
					if w, g := comparable(want), comparable(got); !reflect.DeepEqual(w, g) {
						t.Fatalf("%s: with a cache\n%s\nreference\n%s", where, g, w)
					}
					if w, g := comparable(want), comparable(alone); !reflect.DeepEqual(w, g) {
						t.Fatalf("%s: without a cache\n%s\nreference\n%s", where, g, w)
					}
					if want.Best != nil {
						searched++
					}
				}
			}
		}
		if searched < len(budgets) {
			t.Errorf("%s: %d searches found a spec, too few to compare", name, searched)
		}
	}
}

// comparable is a's answer as text, every field of every candidate, but
// whether the search previewed it (the reference previews every one).
func comparable(a *Advice) string {
	c := *a
	un := func(x *Candidate) *Candidate {
		if x == nil {
			return nil
		}
		y := *x
		y.complete = false
		return &y
	}
	best, floor := un(c.Best), un(c.Floor)
	c.Best, c.Floor, c.RunnersUp = nil, nil, nil
	s := fmt.Sprintf("%+v\nbest %+v\nfloor %+v\n", c, best, floor)
	for _, r := range a.RunnersUp {
		r.Candidate = *un(&r.Candidate)
		s += fmt.Sprintf("runner-up %+v\n", r)
	}
	return s
}
