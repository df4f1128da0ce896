package advise

import (
	"errors"
	"fmt"
	"github.com/nemo-gym/gymtrace/gate/internal/realgym"
	"slices"
	"testing"

	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gate/whatif"
	"github.com/nemo-gym/gymtrace/model"
)

// realAll are the captures of every group that the search is judged on:
// one per variant, each captured with span_groups: all.
var realAll = []string{"s41-obs0-iso/all", "s52-g3-obs0-iso/all", "s41-obs0-leak/all"}

// budgets span the interesting range of these captures: below a single
// process's spans, around the cross-process core, above everything.
var budgets = []string{"1spans/rollout", "10spans/rollout", "45spans/rollout", "50spans/rollout", "60spans/rollout",
	"1000spans/rollout", "5KB/rollout", "12KB/rollout", "1500spans/s", "100GB/day"}

// judged previews set as `preview --budget` does and says whether it fits
// and whether it splits a rollout that the capture, under every group,
// joins: the search's two constraints, recomputed without it.
func judged(eng *whatif.Engine, snap *model.Snapshot, set groups.Set, b whatif.Budget) (fits, joins bool, v whatif.BudgetVerdict) {
	all := eng.Preview(snap, eng.Registry().All())
	split := make([]bool, len(all.PerRollout))
	for i := range all.PerRollout {
		split[i] = all.PerRollout[i].Split()
	}
	rep := eng.Preview(snap, set)
	v = b.Judge(rep, 0)
	joins = true
	for i := range rep.PerRollout {
		if rep.PerRollout[i].Split() && !split[i] {
			joins = false
		}
	}
	return v.Fits, joins, v
}

// TestRecommendMaximal: on real captures, under every budget, the answer
// fits and keeps joins as a fresh preview judges them, and no group of the
// variant can be added to it with both still true.
func TestRecommendMaximal(t *testing.T) {
	for _, name := range realAll {
		eng, snap := realgym.Capture(t, name)
		reg := eng.Registry()
		for _, bs := range budgets {
			t.Run(name+"/"+bs, func(t *testing.T) {
				b := mustBudget(t, bs)
				a, err := Recommend(eng, snap, Options{Budget: b, RunnersUp: 3})
				if err != nil {
					t.Fatal(err)
				}
				if a.Unjudged != 0 {
					t.Fatalf("capture under all leaves %v unjudged", reg.Names(a.Unjudged))
				}
				if a.Best == nil {
					fits, _, v := judged(eng, snap, a.Free|1<<groups.Rollout, b)
					if fits {
						t.Fatalf("no answer (%v) though %s alone fits: %v", a.Outcome, reg.Spec(a.Free|1<<groups.Rollout), v)
					}
					return
				}
				best := a.Best.Set
				fits, joins, v := judged(eng, snap, best, b)
				if !fits || !joins {
					t.Fatalf("best %s: fits %v (%v), joins %v", reg.Spec(best), fits, v, joins)
				}
				if v != a.Best.Verdict {
					t.Errorf("best's verdict %v, preview's %v", a.Best.Verdict, v)
				}
				for _, info := range reg.Groups() {
					g := info.Group
					if best.Has(g) {
						continue
					}
					if fits, joins, v := judged(eng, snap, best.With(g), b); fits && joins {
						t.Errorf("best %s is not maximal: adding %s still fits (%v) and joins", reg.Spec(best), info.Name, v)
					}
				}
				for _, r := range a.RunnersUp {
					if fits, joins, _ := judged(eng, snap, r.Set, b); !fits || !joins {
						t.Errorf("runner-up %s: fits %v, joins %v", reg.Spec(r.Set), fits, joins)
					}
					if better(&r.Candidate, a.Best, reg) {
						t.Errorf("runner-up %s ranks above the best %s", reg.Spec(r.Set), reg.Spec(best))
					}
				}
			})
		}
	}
}

// TestRecommendAgreesWithExhaustive: pruning on cost loses nothing. Every
// spec of the searched space is previewed without the search, and the
// maximal feasible ones, ranked, are exactly the search's.
func TestRecommendAgreesWithExhaustive(t *testing.T) {
	for _, name := range realAll[:2] {
		eng, snap := realgym.Capture(t, name)
		reg := eng.Registry()
		for _, bs := range budgets {
			t.Run(name+"/"+bs, func(t *testing.T) {
				b := mustBudget(t, bs)
				opt := Options{Budget: b, RunnersUp: 1 << 10}
				a, err := Recommend(eng, snap, opt)
				if err != nil {
					t.Fatal(err)
				}
				var gs []groups.Group
				for _, info := range reg.Groups() {
					if a.Searched.Has(info.Group) {
						gs = append(gs, info.Group)
					}
				}
				feasible := map[groups.Set]*Candidate{}
				for mask := 1; mask < 1<<len(gs); mask++ {
					set := a.Free | a.Unjudged
					for i, g := range gs {
						if mask&(1<<i) != 0 {
							set = set.With(g)
						}
					}
					if set == 0 {
						continue
					}
					if fits, joins, v := judged(eng, snap, set, b); fits && joins {
						s := &refSearch{eng: eng, snap: snap, opt: opt, reg: reg, order: gs}
						all := eng.Preview(snap, reg.All())
						s.measure(all)
						feasible[set] = &Candidate{Set: set, Verdict: v, Worth: s.worth(set)}
					}
				}
				var want []*Candidate
				for set, c := range feasible {
					maximal := true
					for _, g := range gs {
						if !set.Has(g) && feasible[set.With(g)] != nil {
							maximal = false
						}
					}
					if maximal {
						want = append(want, c)
					}
				}
				slices.SortFunc(want, func(x, y *Candidate) int {
					if better(x, y, reg) {
						return -1
					}
					return 1
				})
				var got []string
				if a.Best != nil {
					got = append(got, reg.Spec(a.Best.Set))
				}
				for _, r := range a.RunnersUp {
					got = append(got, reg.Spec(r.Set))
				}
				var wantNames []string
				for _, c := range want {
					wantNames = append(wantNames, reg.Spec(c.Set))
				}
				if fmt.Sprint(got) != fmt.Sprint(wantNames) {
					t.Fatalf("search ranks %v\nexhaustive %v", got, wantNames)
				}
				if a.Previewed+a.Pruned < a.Space-1 || a.Previewed > a.Space+1 {
					t.Errorf("previewed %d, pruned %d of %d", a.Previewed, a.Pruned, a.Space)
				}
			})
		}
	}
}

// TestRecommendConstraints: --must keeps its groups (verify, here, which
// the best under this budget otherwise drops), --never keeps them out, and
// --allow-splits keeps at least as much as joins intact do.
func TestRecommendConstraints(t *testing.T) {
	eng, snap := realgym.Capture(t, "s41-obs0-iso/all")
	reg := eng.Registry()
	b := mustBudget(t, "10spans/rollout")
	free, err := Recommend(eng, snap, Options{Budget: b})
	if err != nil {
		t.Fatal(err)
	}
	if free.Best == nil || free.Best.Set.Has(groups.Verify) {
		t.Fatalf("without --must the best is %+v; the test wants one without verify", free.Best)
	}
	must, err := Recommend(eng, snap, Options{Budget: b, Must: 1 << groups.Verify})
	if err != nil {
		t.Fatal(err)
	}
	if must.Best == nil || !must.Best.Set.Has(groups.Verify) {
		t.Fatalf("--must verify: best %+v", must.Best)
	}
	if fits, joins, _ := judged(eng, snap, must.Best.Set, b); !fits || !joins {
		t.Errorf("--must verify: %s fits %v joins %v", reg.Spec(must.Best.Set), fits, joins)
	}
	never, err := Recommend(eng, snap, Options{Budget: mustBudget(t, "1000spans/rollout"), Never: 1<<groups.Sandbox | 1<<groups.Job})
	if err != nil {
		t.Fatal(err)
	}
	if never.Best == nil || never.Best.Set.Has(groups.Sandbox) || never.Best.Set.Has(groups.Job) {
		t.Fatalf("--never sandbox,job: best %+v", never.Best)
	}
	if !never.Best.Set.Has(groups.Server) || !never.Best.Set.Has(groups.Verify) {
		t.Errorf("--never sandbox,job under a roomy budget: best %s lacks the rest", reg.Spec(never.Best.Set))
	}
	splits, err := Recommend(eng, snap, Options{Budget: b, AllowSplits: true})
	if err != nil {
		t.Fatal(err)
	}
	if splits.Best == nil || better(free.Best, splits.Best, reg) {
		t.Errorf("--allow-splits: best %+v ranks below the joined best %+v", splits.Best, free.Best)
	}
	if _, err := Recommend(eng, snap, Options{Budget: b, Must: 1 << groups.Verify, Never: 1 << groups.Verify}); !errors.Is(err, ErrConflict) {
		t.Errorf("verify both required and excluded: %v, want ErrConflict", err)
	}
}

// TestRecommendUnjudged: over a capture made under default, the groups it
// holds no span of cost nothing there: the answer has them (maximal as
// preview judges it), listed as not judged, and --never keeps them out.
func TestRecommendUnjudged(t *testing.T) {
	eng, snap := realgym.Capture(t, "s41-obs0-iso/spec-default")
	reg := eng.Registry()
	b := mustBudget(t, "50spans/rollout")
	a, err := Recommend(eng, snap, Options{Budget: b})
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range []groups.Group{groups.Agent, groups.ModelCall, groups.Verify, groups.Sandbox} {
		if !a.Unjudged.Has(g) {
			t.Errorf("%s is not listed as unjudged: %v", reg.Name(g), reg.Names(a.Unjudged))
		}
	}
	if a.Best == nil || a.Best.Set&a.Unjudged != a.Unjudged {
		t.Fatalf("best %+v lacks the unjudged %v", a.Best, reg.Names(a.Unjudged))
	}
	for _, info := range reg.Groups() {
		if !a.Best.Set.Has(info.Group) {
			if fits, joins, _ := judged(eng, snap, a.Best.Set.With(info.Group), b); fits && joins {
				t.Errorf("best %s is not maximal: %s fits too", reg.Spec(a.Best.Set), info.Name)
			}
		}
	}
	out, err := Recommend(eng, snap, Options{Budget: b, Never: a.Unjudged})
	if err != nil || out.Best == nil || out.Best.Set&a.Unjudged != 0 || out.Unjudged != 0 {
		t.Errorf("--never the unjudged: %v %+v", err, out.Best)
	}
}

// TestRecommendMustTooDear: when the required groups alone miss the
// budget there is no answer, and the floor says by how much.
func TestRecommendMustTooDear(t *testing.T) {
	eng, snap := realgym.Capture(t, "s41-obs0-iso/all")
	a, err := Recommend(eng, snap, Options{Budget: mustBudget(t, "10spans/rollout"), Must: 1 << groups.Server})
	if err != nil {
		t.Fatal(err)
	}
	if a.Outcome != MustTooDear || a.Best != nil || a.Floor == nil || a.Floor.Verdict.Fits || !a.Floor.Set.Has(groups.Server) {
		t.Fatalf("--must server at 10 spans/rollout: %v best %+v floor %+v", a.Outcome, a.Best, a.Floor)
	}
	if a.Previewed != 1 {
		t.Errorf("previewed %d specs, want the one that already misses", a.Previewed)
	}
	none, err := Recommend(eng, snap, Options{Budget: mustBudget(t, "0.01spans/rollout")})
	if err != nil {
		t.Fatal(err)
	}
	if none.Best != nil || none.Outcome != NoneFits || none.Floor == nil {
		t.Errorf("0.01 spans/rollout: %v best %+v floor %+v", none.Outcome, none.Best, none.Floor)
	}
}

// TestUnion: overlaps count once, empty and inverted intervals not at all.
func TestUnion(t *testing.T) {
	tests := []struct {
		ivs  [][2]int64
		want int64
	}{
		{nil, 0},
		{[][2]int64{{0, 10}}, 10},
		{[][2]int64{{0, 10}, {5, 15}}, 15},
		{[][2]int64{{20, 30}, {0, 10}}, 20},
		{[][2]int64{{0, 10}, {2, 3}, {10, 12}}, 12},
		{[][2]int64{{5, 5}, {7, 3}}, 0},
	}
	for _, tt := range tests {
		if got := union(slices.Clone(tt.ivs)); got != tt.want {
			t.Errorf("union(%v) = %d, want %d", tt.ivs, got, tt.want)
		}
	}
}

// BenchmarkRecommend: the search over real captures, at a budget every
// spec fits (nothing pruned: every spec of the space previewed) and at
// one that prunes most of it.
func BenchmarkRecommend(b *testing.B) {
	for _, name := range []string{"s41-obs0-iso/all", "s52-g3-obs0-iso/all"} {
		eng, snap := realgym.Capture(b, name)
		for _, bs := range []string{"1000spans/rollout", "10spans/rollout"} {
			budget := mustBudget(b, bs)
			b.Run(name+"/"+bs, func(b *testing.B) {
				b.ReportAllocs()
				var a *Advice
				for i := 0; i < b.N; i++ {
					var err error
					if a, err = Recommend(eng, snap, Options{Budget: budget, RunnersUp: 3}); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(a.Previewed), "previews/op")
			})
		}
	}
}
