package advise

// The search as it was before it kept anything between searches and
// previewed only the candidates its answer needs: every spec that fits is
// previewed and measured. TestRecommendIsReference holds the search to it.

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gate/whatif"
	"github.com/nemo-gym/gymtrace/model"
)

// refSearch holds one refSearch's state.
type refSearch struct {
	eng   *whatif.Engine
	snap  *model.Snapshot
	opt   Options
	reg   *groups.Registry
	base  []bool // per rollout: split as captured
	rolls []refRoll
	seen  map[groups.Set]*Candidate
	done  map[*Candidate]bool
	order []groups.Group
}

// refRoll is one rollout's spans as the worth measures read them.
type refRoll struct {
	start, end int64
	spans      []refSpan
}

type refSpan struct {
	group      groups.Group
	start, end int64
	err        bool
}

// Recommend searches the spec space of eng's registry over snap for the
// specs that fit opt.Budget, and returns the best that no group can be
// added to, with the runners-up. Cost is monotone in the spec (a group
// only adds spans), so once a spec misses the budget none of its
// supersets is previewed.
func refRecommend(eng *whatif.Engine, snap *model.Snapshot, opt Options) (*Advice, error) {
	reg := eng.Registry()
	if c := opt.Must & opt.Never; c != 0 {
		return nil, fmt.Errorf("%w: %s", ErrConflict, strings.Join(reg.Names(c), ", "))
	}
	all := eng.Preview(snap, reg.All())
	s := &refSearch{eng: eng, snap: snap, opt: opt, reg: reg, seen: map[groups.Set]*Candidate{}, done: map[*Candidate]bool{}}
	for i := range all.PerRollout {
		s.base = append(s.base, all.PerRollout[i].Split())
	}
	captured := all.Input.Captured
	a := &Advice{Options: opt}
	for _, info := range reg.Groups() {
		g := info.Group
		switch {
		case opt.Never.Has(g):
		case !info.EmitsSpans:
			a.Free = a.Free.With(g)
		case opt.Must.Has(g):
		case captured.Has(g):
			a.Searched = a.Searched.With(g)
		default:
			a.Unjudged = a.Unjudged.With(g)
		}
	}
	s.measure(all)
	// Heavy groups first: a spec over budget is found early and its
	// supersets never previewed.
	cost := map[groups.Group]int{}
	for _, gc := range all.PerGroup {
		cost[gc.Group] = gc.Captured
	}
	for _, info := range reg.Groups() {
		if a.Searched.Has(info.Group) {
			s.order = append(s.order, info.Group)
		}
	}
	sort.SliceStable(s.order, func(i, j int) bool { return cost[s.order[i]] > cost[s.order[j]] })
	a.Space = 1 << len(s.order)

	root := opt.Must | a.Free | a.Unjudged
	if root != 0 {
		if c := s.eval(root); !c.Verdict.Fits {
			a.Outcome, a.Floor = MustTooDear, s.complete(c)
			a.Previewed, a.Pruned = len(s.seen), a.Space-1
			return a, nil
		}
	}
	a.Pruned = s.walk(root, 0)
	a.Previewed = len(s.seen)

	var feasible []*Candidate
	fits := false
	for _, c := range s.seen {
		// A spec that keeps no group's spans is telemetry off by another
		// name: never an answer.
		if !c.Verdict.Fits || c.Groups == 0 {
			continue
		}
		fits = true
		if s.feasible(c) && s.maximal(c) {
			feasible = append(feasible, c)
		}
	}
	if len(feasible) == 0 {
		a.Outcome = NoneJoins
		if !fits {
			a.Outcome = NoneFits
		}
		a.Floor = s.complete(s.cheapest())
		return a, nil
	}
	sort.Slice(feasible, func(i, j int) bool { return better(feasible[i], feasible[j], reg) })
	a.Best = feasible[0]
	for _, c := range feasible[1:] {
		if len(a.RunnersUp) == opt.RunnersUp {
			break
		}
		a.RunnersUp = append(a.RunnersUp, RunnerUp{Candidate: *c, Short: shortfall(a.Best, c),
			Lacks: a.Best.Set &^ c.Set, Adds: c.Set &^ a.Best.Set})
	}
	return a, nil
}

// walk previews every superset of s made by adding groups of s.order from
// index from on, in order, stopping at each that misses the budget. It
// returns how many specs it skipped that way.
func (s *refSearch) walk(set groups.Set, from int) int {
	pruned := 0
	for i := from; i < len(s.order); i++ {
		t := set.With(s.order[i])
		if !s.eval(t).Verdict.Fits {
			// Every superset of t adding later groups costs at least as much.
			pruned += 1<<(len(s.order)-i-1) - 1
			continue
		}
		pruned += s.walk(t, i+1)
	}
	return pruned
}

// feasible: fits, and keeps joins unless splits are allowed.
func (s *refSearch) feasible(c *Candidate) bool {
	return c != nil && c.Verdict.Fits && (s.opt.AllowSplits || c.Joins())
}

// maximal: no searched group can be added with the result still
// feasible. A superset never previewed missed the budget (walk's pruning).
func (s *refSearch) maximal(c *Candidate) bool {
	for _, g := range s.order {
		if !c.Set.Has(g) && s.feasible(s.seen[c.Set.With(g)]) {
			return false
		}
	}
	return true
}

// cheapest is the judged spec with the lowest cost, for a report that
// nothing fits.
func (s *refSearch) cheapest() *Candidate {
	var best *Candidate
	for _, c := range s.seen {
		if c.Groups == 0 {
			continue
		}
		if best == nil || c.Verdict.Value < best.Verdict.Value || c.Verdict.Value == best.Verdict.Value && c.Set < best.Set {
			best = c
		}
	}
	return best
}

// eval judges set once: its cost from the engine's estimate, which
// simulates nothing, and, when it fits, its joins from a preview and what
// it keeps (complete). A spec over budget is an answer only as the floor,
// completed then.
func (s *refSearch) eval(set groups.Set) *Candidate {
	if c, ok := s.seen[set]; ok {
		return c
	}
	rep := s.eng.Estimate(s.snap, set)
	c := &Candidate{Set: set, Verdict: s.opt.Budget.Judge(rep, s.opt.Rate), Spans: rep.Result.Spans, Bytes: rep.Result.Bytes}
	c.Groups = s.groupsKept(set)
	s.seen[set] = c
	if c.Verdict.Fits {
		s.complete(c)
	}
	return c
}

// complete previews c's spec for its joins and measures what it keeps.
func (s *refSearch) complete(c *Candidate) *Candidate {
	if c == nil || s.done[c] {
		return c
	}
	rep := s.eng.Preview(s.snap, c.Set)
	c.RolloutsJoined, c.RolloutsSplit = rep.Result.RolloutsJoined, rep.Result.RolloutsSplit
	for i := range rep.PerRollout {
		if rep.PerRollout[i].Split() && i < len(s.base) && !s.base[i] {
			c.NewSplits++
		}
	}
	c.Worth = s.worth(c.Set)
	s.done[c] = true
	return c
}

// measure records each rollout's spans with the group that gates them.
func (s *refSearch) measure(all *whatif.Report) {
	snap := all.Structure.Snap
	for _, r := range snap.Rollouts {
		rs := refRoll{start: r.Start, end: r.End}
		gs := s.eng.SpanGroups(snap, r)
		for fi, f := range r.Fragments {
			for i := range f.Spans {
				sp := &f.Spans[i]
				rs.spans = append(rs.spans, refSpan{group: gs[fi][i], start: max(sp.Start, r.Start), end: min(sp.End, r.End), err: sp.Status == model.StatusError})
			}
		}
		// In start order once, so that what each spec keeps is in order
		// already and its union needs no sort.
		sort.SliceStable(rs.spans, func(i, j int) bool { return rs.spans[i].start < rs.spans[j].start })
		s.rolls = append(s.rolls, rs)
	}
}

// worth measures what set keeps of the rollouts.
func (s *refSearch) worth(set groups.Set) Worth {
	var w Worth
	var ivs [][2]int64
	n := 0
	for _, r := range s.rolls {
		ivs = ivs[:0]
		for _, sp := range r.spans {
			if !groups.Kept(sp.group, set) {
				continue
			}
			ivs = append(ivs, [2]int64{sp.start, sp.end})
			if sp.err {
				w.ErrorSpans++
			}
		}
		if r.end <= r.start {
			continue
		}
		n++
		w.WallShare += float64(unionSorted(ivs)) / float64(r.end-r.start)
	}
	if n > 0 {
		w.WallShare /= float64(n)
	}
	w.Groups = s.groupsKept(set)
	return w
}

// groupsKept counts set's groups that gate spans and were chosen among.
func (s *refSearch) groupsKept(set groups.Set) int {
	n := 0
	for _, info := range s.reg.Groups() {
		if set.Has(info.Group) && info.EmitsSpans && (s.opt.Must.Has(info.Group) || slices.Contains(s.order, info.Group)) {
			n++
		}
	}
	return n
}
