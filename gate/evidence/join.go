package evidence

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/nemo-gym/gymtrace/gate/rollouts"
	"github.com/nemo-gym/gymtrace/model"
)

// How says how an outcome was joined to its traced rollout, in order of
// trust.
type How uint8

// Ways of joining.
const (
	NotJoined How = iota
	Exact         // by rollout id, on spans and in the files
	Inferred      // by model-call time windows against the model server's spans
)

// String names the way as --json spells it.
func (h How) String() string {
	switch h {
	case Exact:
		return "exact"
	case Inferred:
		return "inferred"
	}
	return "not_joined"
}

// Reason is why outcomes could not be joined: one constant per reason,
// owning its sentence and JSON code.
type Reason uint8

// Reasons nothing (or not everything) joined.
const (
	NoReason  Reason = iota
	NoIDs            // the spans carry no rollout id and the files no time windows
	RLNoIDs          // the files are NeMo-RL's, whose rows carry no rollout id
	OtherRun         // ids on both sides, none in common
	NoOutcome        // the files name no rollout
	Unmatched        // no ids on spans, and some model-call windows matched no rollout alone
)

// Code names the reason as --json spells it.
func (r Reason) Code() string {
	return [...]string{"", "no_rollout_ids_on_spans", "rl_rows_no_rollout_id", "no_id_in_common", "no_rollout_in_files", "model_call_windows_unmatched"}[r]
}

// String is the reason's sentence.
func (r Reason) String() string {
	return [...]string{"",
		"observability off: no rollout ids on spans, and no model-call windows to match",
		"NeMo-RL rows carry no _ng_rollout_id (idx is a position in the batch)",
		"evidence from another run: no rollout id in common with the traces",
		"the files name no rollout",
		"observability off: no rollout ids on spans, and the rest matched no one rollout's model calls by time"}[r]
}

// Short is the reason in a few words, for a title.
func (r Reason) Short() string {
	return [...]string{"", "no rollout ids", "NeMo-RL rows have no ids", "no id in common", "no rollout in files", "rest unmatched by time"}[r]
}

// Conflict is a way the files and the traces disagree.
type Conflict uint8

// Conflicts, each with its code and sentence.
const (
	NoTrace    Conflict = iota // an attempt in the files with no traced rollout
	Killed                     // dispatched, neither a result nor a failure
	NoEvidence                 // a traced rollout with an id that no file names
	FailedOK                   // a failure row whose trace shows no error
	CallCount                  // the capture's model calls against the trace's model requests
	Latency                    // ng_perf.total_latency_ms against the traced duration
	HealthCall                 // a failed model call in the files, none in the trace
	nConflicts
)

var conflictText = [nConflicts][2]string{
	{"no_trace", "in the files, no traced rollout"},
	{"killed", "dispatched, but neither a result nor a failure: killed"},
	{"no_evidence", "traced, but no file names it"},
	{"failure_but_trace_ok", "a failure row, but its trace shows no error"},
	{"model_call_count", "the capture's model calls differ from the trace's model requests"},
	{"latency", "ng_perf.total_latency_ms differs from the traced duration"},
	{"failed_call_trace_ok", "a failed model call in the files, none in the trace"},
}

// Code names the conflict as --json spells it.
func (c Conflict) Code() string { return conflictText[c][0] }

// String is the conflict's sentence.
func (c Conflict) String() string { return conflictText[c][1] }

// Contradiction is one rollout on which the files and the traces disagree.
type Contradiction struct {
	Kind    Conflict
	Rollout string
	Detail  string // the figures, e.g. "capture 3 calls, trace 2"
}

// maxContradictions bounds the contradictions kept by name; all are counted.
const maxContradictions = 200

// Latency tolerance: a difference past both is a contradiction.
const (
	latencyShare = 0.25
	latencyFloor = 100.0 // milliseconds
)

// Coverage is how much of the traced run the files reach.
type Coverage struct {
	Rollouts int // traced rollouts
	Exact    int
	Inferred int
	Attempts int // attempts the files name
	Untraced int // of those, with no traced rollout
	Reason   Reason
}

// Joined returns the traced rollouts joined, exactly or inferred.
func (c Coverage) Joined() int { return c.Exact + c.Inferred }

// String is the coverage line the reports print.
func (c Coverage) String() string {
	if c.Attempts == 0 && c.Reason == NoReason {
		return "no evidence"
	}
	s := fmt.Sprintf("%d of %d rollouts joined", c.Joined(), c.Rollouts)
	switch {
	case c.Exact > 0 && c.Inferred > 0:
		s += fmt.Sprintf(" (%d exactly by id, %d inferred by model-call time)", c.Exact, c.Inferred)
	case c.Exact > 0:
		s += " exactly by id"
	case c.Inferred > 0:
		s += " by model-call time (inferred)"
	}
	if c.Reason != NoReason {
		s += ": " + c.Reason.String()
	}
	return s
}

// Joined is a Set joined to a structure's rollouts. It holds nothing per
// exactly joined rollout (the Set answers by id); inferred joins are kept
// by rollout id. Immutable once made.
type Joined struct {
	Set      *Set
	Coverage Coverage
	// Conflicts counts contradictions by kind; Contradictions names the
	// first ones.
	Conflicts      [nConflicts]int
	Contradictions []Contradiction
	// Rewards sums up the joined rollouts' rewards.
	Rewards  RewardsJSON
	inferred map[string]int32
	// exact marks, by outcome index, the outcomes joined by id to a
	// rollout of the structure: a bit each, not a map of ids.
	exact []uint64
}

func (j *Joined) isExact(i int32) bool { return j.exact[i>>6]&(1<<(i&63)) != 0 }
func (j *Joined) setExact(i int32)     { j.exact[i>>6] |= 1 << (i & 63) }

// Of returns the outcome joined to the traced rollout id and how, or nil.
func (j *Joined) Of(id string) (*Outcome, How) {
	if j == nil || j.Set == nil {
		return nil, NotJoined
	}
	if i, ok := j.inferred[id]; ok {
		return &j.Set.outcomes[i], Inferred
	}
	if i, ok := j.Set.index(id); ok && j.isExact(i) {
		return &j.Set.outcomes[i], Exact
	}
	return nil, NotJoined
}

// Lookup is Of without the way, for the filter's evidence terms.
func (j *Joined) Lookup(id string) *Outcome {
	o, _ := j.Of(id)
	return o
}

// Join joins s to st's rollouts: exactly by id, else by model-call windows
// against the rollouts' model-server spans, never by order. ended says the
// run is over (files read after it, or the live job ended): only then is a
// dispatched attempt with no result and no failure said to be killed.
func Join(s *Set, st *rollouts.Structure, ended bool) *Joined {
	j := &Joined{Set: s, exact: make([]uint64, (s.Len()+63)/64)}
	c := &j.Coverage
	c.Rollouts, c.Attempts = len(st.Rollouts), s.Len()
	withID := 0
	for _, r := range st.Rollouts {
		if !r.Synthetic {
			withID++
		}
	}
	joined := make([]bool, s.Len())
	roles := newRoles(st.Snap)
	for _, r := range st.Rollouts {
		if r.Synthetic {
			continue
		}
		i, ok := s.index(r.ID)
		if !ok {
			j.add(NoEvidence, r.ID, "")
			continue
		}
		if joined[i] {
			continue // two traced rollouts of one id: the first has it
		}
		c.Exact++
		joined[i] = true
		j.setExact(i)
		j.compare(&s.outcomes[i], r, roles, st.Snap)
	}
	if len(s.windows) > 0 && withID < len(st.Rollouts) {
		j.infer(st, roles, joined)
	}
	for i := range s.outcomes {
		o := &s.outcomes[i]
		if o.State == Dispatched && ended {
			j.add(Killed, o.ID, "")
		}
		if !joined[i] {
			c.Untraced++
			if o.State != Dispatched && c.Joined() > 0 {
				j.add(NoTrace, o.ID, o.State.String())
			}
		}
	}
	switch {
	case c.Joined() == c.Rollouts || s.Len() == 0 && s.RLRows == 0:
	case s.Len() == 0 && s.RLRows > 0:
		c.Reason = RLNoIDs
	case s.Len() == 0:
		c.Reason = NoOutcome
	case withID == 0 && c.Inferred > 0:
		c.Reason = Unmatched
	case withID == 0 && c.Joined() < c.Rollouts:
		c.Reason = NoIDs
	case c.Exact == 0 && withID > 0:
		c.Reason = OtherRun
	}
	if s.Len() == 0 && s.RLRows > 0 {
		c.Reason = RLNoIDs
	}
	j.Rewards = j.rewards()
	return j
}

func (j *Joined) add(k Conflict, id, detail string) {
	j.Conflicts[k]++
	if len(j.Contradictions) < maxContradictions {
		j.Contradictions = append(j.Contradictions, Contradiction{Kind: k, Rollout: id, Detail: detail})
	}
}

// compare lists where a joined outcome and its trace disagree.
func (j *Joined) compare(o *Outcome, r *model.Rollout, roles *roles, snap *model.Snapshot) {
	healthSays := o.CallErrors > 0 || o.Verdict == Unhealthy && strings.Contains(o.Finding, "model_call")
	var calls, callErrs int
	var served bool
	if o.Calls >= 0 || healthSays { // the walk of the rollout's spans only when a figure needs it
		calls, callErrs, served = roles.modelCalls(r)
	}
	if o.Failure != "" && r.Errors == 0 {
		j.add(FailedOK, r.ID, o.Failure)
	}
	if o.Calls >= 0 && served && int(o.Calls) != calls {
		j.add(CallCount, r.ID, fmt.Sprintf("capture %d, trace %d", o.Calls, calls))
	}
	if !math.IsNaN(o.LatencyMS) && o.State == Succeeded {
		traced := float64(r.End-r.Start) / 1e6
		if d := math.Abs(o.LatencyMS - traced); d > latencyFloor && d > latencyShare*traced {
			j.add(Latency, r.ID, fmt.Sprintf("ng_perf %.0f ms, traced %.0f ms", o.LatencyMS, traced))
		}
	}
	if healthSays && served && callErrs == 0 {
		j.add(HealthCall, r.ID, firstNonEmpty(o.Finding, fmt.Sprintf("%d failed in the capture", o.CallErrors)))
	}
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// infer joins outcomes with model-call windows to rollouts without an id:
// an outcome goes to the one rollout whose model-server requests overlap
// most of its windows, when no other rollout does as well, each rollout
// taken once.
func (j *Joined) infer(st *rollouts.Structure, roles *roles, joined []bool) {
	type req struct {
		start, end int64
		roll       int32
	}
	var reqs []req
	for ri, r := range st.Rollouts {
		if !r.Synthetic {
			continue
		}
		roles.eachModelCall(r, func(sp *model.Span) {
			reqs = append(reqs, req{sp.Start, sp.End, int32(ri)})
		})
	}
	if len(reqs) == 0 {
		return
	}
	sort.Slice(reqs, func(a, b int) bool { return reqs[a].start < reqs[b].start })
	var longest int64
	for _, q := range reqs {
		longest = max(longest, q.end-q.start)
	}
	// votes[outcome][rollout] = windows of the outcome whose closest
	// request is the rollout's: the most time in common over the time of
	// both (at least half), and no other request as close.
	votes := map[int32]map[int32]int{}
	windows := map[int32]int{}
	for _, w := range j.Set.windows {
		if joined[w.Outcome] {
			continue
		}
		windows[w.Outcome]++
		best, second, at := 0.0, 0.0, int32(-1)
		lo := sort.Search(len(reqs), func(i int) bool { return reqs[i].start >= w.Start-longest })
		for i := lo; i < len(reqs) && reqs[i].start <= w.End(); i++ {
			q := reqs[i]
			ov := min(q.end, w.End()) - max(q.start, w.Start)
			span := max(q.end, w.End()) - min(q.start, w.Start)
			if span <= 0 || ov <= 0 {
				continue
			}
			switch f := float64(ov) / float64(span); {
			case f > best:
				best, second, at = f, best, q.roll
			case f > second:
				second = f
			}
		}
		if at < 0 || best < 0.5 || best == second {
			continue
		}
		if votes[w.Outcome] == nil {
			votes[w.Outcome] = map[int32]int{}
		}
		votes[w.Outcome][at]++
	}
	taken := map[int32]bool{}
	outs := make([]int32, 0, len(votes))
	for o := range votes {
		outs = append(outs, o)
	}
	sort.Slice(outs, func(a, b int) bool { return outs[a] < outs[b] })
	for _, oi := range outs {
		best, second, at := 0, 0, int32(-1)
		for roll, n := range votes[oi] {
			switch {
			case n > best:
				best, second, at = n, best, roll
			case n > second:
				second = n
			}
		}
		// Most windows inside one rollout's requests, and no rival as good.
		if at < 0 || taken[at] || best == second || 2*best <= windows[oi] {
			continue
		}
		taken[at] = true
		if j.inferred == nil {
			j.inferred = map[string]int32{}
		}
		r := st.Rollouts[at]
		j.inferred[r.ID] = oi
		joined[oi] = true
		j.Coverage.Inferred++
		j.compare(&j.Set.outcomes[oi], r, roles, st.Snap)
	}
}

// Within returns j over the rollouts of st only (those a filter kept): its
// coverage and contradictions are of them, and attempts outside them are
// not said to be untraced.
func (j *Joined) Within(st *rollouts.Structure) *Joined {
	if j == nil {
		return nil
	}
	w := &Joined{Set: j.Set, exact: make([]uint64, len(j.exact))}
	w.Coverage.Rollouts, w.Coverage.Reason = len(st.Rollouts), j.Coverage.Reason
	named := map[string]bool{} // the rollouts the contradictions name
	for _, c := range j.Contradictions {
		named[c.Rollout] = false
	}
	for _, r := range st.Rollouts {
		if _, ok := named[r.ID]; ok {
			named[r.ID] = true
		}
		if i, ok := j.inferred[r.ID]; ok {
			if w.inferred == nil {
				w.inferred = map[string]int32{}
			}
			w.inferred[r.ID] = i
			w.Coverage.Inferred++
		} else if i, ok := j.Set.index(r.ID); ok && j.isExact(i) {
			w.setExact(i)
			w.Coverage.Exact++
		}
	}
	w.Coverage.Attempts = w.Coverage.Joined()
	for _, c := range j.Contradictions {
		if named[c.Rollout] {
			w.add(c.Kind, c.Rollout, c.Detail)
		}
	}
	if w.Coverage.Joined() == w.Coverage.Rollouts && w.Coverage.Reason != RLNoIDs {
		w.Coverage.Reason = NoReason
	}
	w.Rewards = w.rewards()
	return w
}
