package advise

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gate/whatif"
	"github.com/nemo-gym/gymtrace/model"
)

// Options are what the search must respect.
type Options struct {
	Budget whatif.Budget
	// Rate is rollouts per second for /s and /day budgets; 0 takes the
	// capture's own rate, as Budget.Judge does.
	Rate float64
	// Must groups are in every candidate; Never groups in none.
	Must, Never groups.Set
	// AllowSplits accepts specs that split rollouts the capture joins.
	AllowSplits bool
	// RunnersUp is how many candidates after the best to return.
	RunnersUp int
}

// Candidate is one spec judged against the budget and by what it keeps.
type Candidate struct {
	Set     groups.Set
	Verdict whatif.BudgetVerdict
	// Spans and Bytes are the preview's result over the whole capture.
	Spans int
	Bytes int64
	// RolloutsJoined and RolloutsSplit are the preview's; NewSplits counts
	// rollouts the spec splits that the capture joins.
	RolloutsJoined, RolloutsSplit, NewSplits int
	Worth
	// complete: its joins previewed, not only its cost judged.
	complete bool
}

// Worth is what a spec keeps, the ranking's three measures in order.
type Worth struct {
	// WallShare is the mean over rollouts of the share of the rollout's
	// wall time (first start to last end) that its kept spans cover, the
	// union counted once. gym.job wraps every rollout whole and says
	// nothing of where its time went, so it covers nothing here.
	WallShare float64
	// ErrorSpans counts the rollouts' error spans the spec keeps.
	ErrorSpans int
	// Groups counts the spec's groups that gate spans in the capture.
	Groups int
}

// Joins reports whether the candidate keeps every join the capture has.
func (c *Candidate) Joins() bool { return c.NewSplits == 0 }

// Shortfall is why a runner-up ranks below the best: the first measure,
// in ranking order, on which it keeps less.
type Shortfall uint8

// Shortfalls, in ranking order.
const (
	LessWall    Shortfall = iota + 1 // covers less of the rollouts' wall time
	FewerErrors                      // as much wall time, fewer error spans
	FewerGroups                      // as much of both, fewer groups
	Costlier                         // keeps as much, costs more
	Later                            // equal in all, after the best by spec name
)

// String names the shortfall as --json spells it.
func (s Shortfall) String() string {
	switch s {
	case LessWall:
		return "wall_share"
	case FewerErrors:
		return "error_spans"
	case FewerGroups:
		return "groups"
	case Costlier:
		return "cost"
	case Later:
		return "name"
	}
	return "none"
}

// RunnerUp is a candidate after the best, with why it ranks lower.
type RunnerUp struct {
	Candidate
	Short Shortfall
	// Lacks holds the best's groups it does not have, Adds its groups the
	// best does not have.
	Lacks, Adds groups.Set
}

// Why says in one phrase why r ranks below best.
func (r RunnerUp) Why(best *Candidate) string {
	switch r.Short {
	case LessWall:
		return fmt.Sprintf("covers %.1f%% of rollout wall time, %.1f points less", 100*r.WallShare, 100*(best.WallShare-r.WallShare))
	case FewerErrors:
		return fmt.Sprintf("as much wall time, keeps %d error spans, %d fewer", r.ErrorSpans, best.ErrorSpans-r.ErrorSpans)
	case FewerGroups:
		return fmt.Sprintf("as much wall time and errors, keeps %d groups, %d fewer", r.Groups, best.Groups-r.Groups)
	case Costlier:
		return fmt.Sprintf("keeps as much, costs %.2f more %s", r.Verdict.Value-best.Verdict.Value, Unit(best.Verdict.Budget))
	}
	return "keeps as much at the same cost"
}

// Unit is a budget's unit and period, e.g. "spans/rollout", "bytes/day".
func Unit(b whatif.Budget) string {
	if b.Bytes {
		return "bytes/" + b.Per
	}
	return "spans/" + b.Per
}

// Outcome says how the search ended.
type Outcome uint8

// Outcomes.
const (
	Found       Outcome = iota // Best is set
	MustTooDear                // the --must groups alone miss the budget
	NoneFits                   // no spec of the space fits
	NoneJoins                  // specs fit, but each splits rollouts the capture joins
)

// String names the outcome as --json spells it.
func (o Outcome) String() string {
	switch o {
	case MustTooDear:
		return "must_too_dear"
	case NoneFits:
		return "none_fits"
	case NoneJoins:
		return "none_joins"
	}
	return "found"
}

// Text is the outcome in a sentence for reports.
func (o Outcome) Text() string {
	switch o {
	case MustTooDear:
		return "the required groups alone miss the budget"
	case NoneFits:
		return "no spec keeping any group's spans fits the budget"
	case NoneJoins:
		return "every spec that fits splits rollouts the capture joins (--allow-splits accepts that)"
	}
	return "a spec fits"
}

// Advice is the search's answer.
type Advice struct {
	Options Options
	Outcome Outcome
	// Searched are the groups the search chose among: the variant's groups
	// with spans in the capture, less Must and Never. Free groups emit no
	// spans in Gym (a metric at most) and cost nothing against a span or
	// byte budget. Unjudged groups emit spans, but the capture holds none:
	// here they cost nothing either, so a maximal answer has them too, yet
	// what they cost where they do emit is unknown (capture with
	// span_groups: all to judge them, or name them in Never). Both are in
	// every candidate and keep nothing.
	Searched, Free, Unjudged groups.Set
	// Space is the number of specs the search chose among (2^Searched);
	// Previewed how many it judged by cost (the joins of those that fit
	// as far as the answer needs them); Pruned how many it never had to,
	// because a subset of theirs already missed the budget.
	Space, Previewed, Pruned int
	Best                     *Candidate
	RunnersUp                []RunnerUp
	// Floor, when nothing fits, is the cheapest spec judged, to say by
	// how much the budget is missed.
	Floor *Candidate
}

// ErrConflict is returned when a group is both required and excluded.
var ErrConflict = errors.New("a group is both required and excluded")

// search holds one search's state.
type search struct {
	eng   *whatif.Engine
	snap  *model.Snapshot
	opt   Options
	reg   *groups.Registry
	kept  *structKept
	seen  map[groups.Set]*Candidate
	order []groups.Group
}

// Recommend searches the spec space of eng's registry over snap for the
// specs that fit opt.Budget, and returns the best that no group can be
// added to, with the runners-up. Cost is monotone in the spec (a group
// only adds spans), so once a spec misses the budget none of its
// supersets is judged. It keeps nothing: (*Cache).Recommend gives the same
// answer, keeping what it measured for the next search.
func Recommend(eng *whatif.Engine, snap *model.Snapshot, opt Options) (*Advice, error) {
	return new(Cache).Recommend(eng, snap, opt)
}

// Recommend is the package's Recommend, reading and keeping in c what
// searches of eng measure: of each structure searched (a few), each
// spec's joins and worth, whatever the budget; of each rollout, by
// version, what its groups cover. Another budget or constraint over the
// same snapshot previews only specs not previewed yet, and a snapshot
// with a few rollouts more measures only those. Not safe for concurrent
// use.
func (c *Cache) Recommend(eng *whatif.Engine, snap *model.Snapshot, opt Options) (*Advice, error) {
	reg := eng.Registry()
	if c := opt.Must & opt.Never; c != 0 {
		return nil, fmt.Errorf("%w: %s", ErrConflict, strings.Join(reg.Names(c), ", "))
	}
	// Input.Captured and PerGroup are Preview's, without simulating.
	all := eng.Estimate(snap, reg.All())
	s := &search{eng: eng, snap: snap, opt: opt, reg: reg, seen: map[groups.Set]*Candidate{},
		kept: c.structure(eng, all.Structure)}
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
	// Heavy groups first: a spec over budget is found early and its
	// supersets never judged.
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
	s.answer(a)
	return a, nil
}

// answer ranks the specs that fit and keeps, in rank order, those
// feasible and maximal: the best, then the runners-up. A spec with a
// group more keeps at least as much wall time and errors and one group
// more, so it ranks before: when a spec is reached, whether each of its
// one-group supersets is feasible is known already, and the specs ranked
// after the last runner-up need no preview.
func (s *search) answer(a *Advice) {
	var fit []*Candidate
	var sets []groups.Set
	for _, c := range s.seen {
		// A spec that keeps no group's spans is telemetry off by another
		// name: never an answer.
		if c.Verdict.Fits && c.Groups > 0 {
			fit, sets = append(fit, c), append(sets, c.Set)
		}
	}
	s.kept.worths(sets)
	for _, c := range fit {
		s.measure(c)
	}
	sort.Slice(fit, func(i, j int) bool { return better(fit[i], fit[j], s.reg) })
	var picked []*Candidate
	for _, c := range fit {
		if s.opt.RunnersUp >= 0 && len(picked) > s.opt.RunnersUp {
			break
		}
		if s.feasible(c) && s.maximal(c) {
			picked = append(picked, s.complete(c))
		}
	}
	if len(picked) == 0 {
		a.Outcome = NoneJoins
		if len(fit) == 0 {
			a.Outcome = NoneFits
		}
		a.Floor = s.complete(s.cheapest())
		return
	}
	a.Best = picked[0]
	for _, c := range picked[1:] {
		a.RunnersUp = append(a.RunnersUp, RunnerUp{Candidate: *c, Short: shortfall(a.Best, c),
			Lacks: a.Best.Set &^ c.Set, Adds: c.Set &^ a.Best.Set})
	}
}

// walk judges every superset of s made by adding groups of s.order from
// index from on, in order, stopping at each that misses the budget. It
// returns how many specs it skipped that way.
func (s *search) walk(set groups.Set, from int) int {
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
func (s *search) feasible(c *Candidate) bool {
	if c == nil || !c.Verdict.Fits {
		return false
	}
	return s.opt.AllowSplits || s.joins(c).Joins()
}

// maximal: no searched group can be added with the result still
// feasible. A superset never judged missed the budget (walk's pruning).
func (s *search) maximal(c *Candidate) bool {
	for _, g := range s.order {
		if !c.Set.Has(g) && s.feasible(s.seen[c.Set.With(g)]) {
			return false
		}
	}
	return true
}

// cheapest is the judged spec with the lowest cost, for a report that
// nothing fits.
func (s *search) cheapest() *Candidate {
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

// eval judges set once, by its cost from the engine's estimate, which
// simulates nothing.
func (s *search) eval(set groups.Set) *Candidate {
	if c, ok := s.seen[set]; ok {
		return c
	}
	rep := s.eng.Estimate(s.snap, set)
	c := &Candidate{Set: set, Verdict: s.opt.Budget.Judge(rep, s.opt.Rate), Spans: rep.Result.Spans, Bytes: rep.Result.Bytes}
	c.Groups = s.groupsKept(set)
	s.seen[set] = c
	return c
}

// complete gives c its joins and what it keeps.
func (s *search) complete(c *Candidate) *Candidate {
	if c == nil {
		return c
	}
	s.measure(c)
	return s.joins(c)
}

// joins previews c's spec for the rollouts it joins and splits, once a
// structure.
func (s *search) joins(c *Candidate) *Candidate {
	if c.complete {
		return c
	}
	j := s.kept.joins(s.eng, c.Set)
	c.RolloutsJoined, c.RolloutsSplit, c.NewSplits = j.joined, j.split, j.newSplits
	c.complete = true
	return c
}

// measure sets c's worth: what its spec keeps.
func (s *search) measure(c *Candidate) {
	share, errs := s.kept.worth(c.Set)
	c.Worth = Worth{WallShare: share, ErrorSpans: errs, Groups: s.groupsKept(c.Set)}
}

// groupsKept counts set's groups that gate spans and were chosen among.
func (s *search) groupsKept(set groups.Set) int {
	n := 0
	for _, info := range s.reg.Groups() {
		if set.Has(info.Group) && info.EmitsSpans && (s.opt.Must.Has(info.Group) || slices.Contains(s.order, info.Group)) {
			n++
		}
	}
	return n
}

// union is the length the intervals cover, overlaps counted once. It
// sorts ivs.
func union(ivs [][2]int64) int64 {
	sort.Slice(ivs, func(i, j int) bool { return ivs[i][0] < ivs[j][0] })
	return unionSorted(ivs)
}

// unionSorted is union of intervals in start order.
func unionSorted(ivs [][2]int64) int64 {
	total, a, b := int64(0), int64(0), int64(math.MinInt64)
	for _, iv := range ivs {
		if iv[1] <= iv[0] {
			continue
		}
		if iv[0] > b {
			if b > a {
				total += b - a
			}
			a, b = iv[0], iv[1]
			continue
		}
		b = max(b, iv[1])
	}
	if b > a {
		total += b - a
	}
	return total
}

// wallGrain is the resolution at which wall shares are told apart: a
// tenth of a percentage point, below which the ranking goes to errors.
const wallGrain = 1000

func wallRank(w float64) int64 { return int64(math.Round(w * wallGrain)) }

// better ranks a before b: more wall time, more error spans, more groups,
// lower cost, then the spec's name.
func better(a, b *Candidate, reg *groups.Registry) bool {
	if x, y := wallRank(a.WallShare), wallRank(b.WallShare); x != y {
		return x > y
	}
	if a.ErrorSpans != b.ErrorSpans {
		return a.ErrorSpans > b.ErrorSpans
	}
	if a.Groups != b.Groups {
		return a.Groups > b.Groups
	}
	if a.Verdict.Value != b.Verdict.Value {
		return a.Verdict.Value < b.Verdict.Value
	}
	return reg.Spec(a.Set) < reg.Spec(b.Set)
}

// shortfall is the first measure on which c ranks below best.
func shortfall(best, c *Candidate) Shortfall {
	switch {
	case wallRank(c.WallShare) != wallRank(best.WallShare):
		return LessWall
	case c.ErrorSpans != best.ErrorSpans:
		return FewerErrors
	case c.Groups != best.Groups:
		return FewerGroups
	case c.Verdict.Value != best.Verdict.Value:
		return Costlier
	}
	return Later
}
