package whatif

import (
	"fmt"
	"github.com/nemo-gym/gymtrace/gate/groups"
	"math"
	"strings"

	"github.com/nemo-gym/gymtrace/model"
)

// Spread is how far a real run under a previewed spec may differ from the
// preview in spans whose presence depends on timing. G3 listens for the
// client's disconnect on every request (an http receive that the end of
// the answer cancels, so it carries no asgi.event.type); when the caller
// is gone before a 200 answer's last, empty body message, the listener
// hears http.disconnect instead and that http send is never made. Which
// requests race depends on timing, so two runs under one spec differ by a
// few ASGI spans: a preview is exact only up to that.
type Spread struct {
	// Requests are the kept request spans with a disconnect listener:
	// each may have an ASGI span fewer or more in another run.
	Requests int
	// Fewer and More count the ASGI spans those requests have below and
	// above the usual shape of a request with their outcome, in this
	// capture (a race is one fewer).
	Fewer, More int
	// Run bounds the deviations a run has: the 95% upper confidence limit
	// of their expected count at this capture's rate (three when the
	// capture shows none), rounded up.
	Run int
	// SpansMin and SpansMax bound the spans of a run under the spec:
	// Result.Spans with this capture's deviations undone, give or take Run.
	SpansMin, SpansMax int
	// Rollout is the most a rollout's spans may be off by: its share of
	// the run's deviations (see PerRollout).
	Rollout int
	// PerRollout bounds each rollout's spans the same way, by rollout ID.
	PerRollout map[string]SpreadRange
}

// SpreadRange is a rollout's spans in a run under the spec, at least Min,
// at most Max.
type SpreadRange struct{ Min, Max int }

// Sentence says what the spread is and why, for every view.
func (s *Spread) Sentence() string {
	var measured string
	switch {
	case s.Fewer+s.More == 0:
		measured = "in this capture none did"
	case s.More == 0:
		measured = fmt.Sprintf("in this capture %d did", s.Fewer)
	default:
		measured = fmt.Sprintf("in this capture they had %d ASGI spans fewer and %d more than their usual shape", s.Fewer, s.More)
	}
	return fmt.Sprintf("timing: %d kept requests have Gym's disconnect listener, and which of them lose their last http send to a caller "+
		"already gone (the listener's http receive then reads http.disconnect) depends on timing; %s, so a run under this spec has "+
		"%d to %d spans, and a rollout up to %d more or fewer than shown", s.Requests, measured, s.SpansMin, s.SpansMax, s.Rollout)
}

// TimingSpread returns how far a run under rep's spec may differ from rep
// in timing-dependent ASGI spans, or nil when the kept spans have none
// (no G3 disconnect listener among them, or server off). rep must come
// from e's Preview of snap.
func (e *Engine) TimingSpread(snap *model.Snapshot, rep *Report) *Spread {
	if rep == nil || rep.Structure == nil {
		return nil
	}
	in := snap.Interner()
	eventKey, ok := in.Lookup("asgi.event.type")
	if !ok {
		return nil
	}
	st := rep.Structure
	type request struct {
		rollout string // "" for run-level traffic
		failed  bool
		asgi    int // kept ASGI children
	}
	var reqs []request
	e.spreadGen++
	walk := func(id string, r *model.Rollout) {
		for _, f := range r.Fragments {
			for _, q := range e.spreadReqs(in, f, rep.Spec, eventKey) {
				reqs = append(reqs, request{rollout: id, failed: q.failed, asgi: int(q.asgi)})
			}
		}
	}
	for _, r := range st.Rollouts {
		walk(r.ID, r)
	}
	st.ForOthers(func(r *model.Rollout) { walk("", r) })
	e.evictSpread()
	if len(reqs) == 0 {
		return nil
	}
	// The usual shape of a request with its outcome is the most common one.
	usual := map[bool]int{}
	for _, failed := range []bool{false, true} {
		counts := map[int]int{}
		for _, q := range reqs {
			if q.failed == failed {
				counts[q.asgi]++
			}
		}
		best := -1
		for n, c := range counts {
			if best < 0 || c > counts[best] || c == counts[best] && n > best {
				best = n
			}
		}
		usual[failed] = best
	}
	s := &Spread{Requests: len(reqs), PerRollout: map[string]SpreadRange{}}
	per := map[string]struct{ requests, undo int }{}
	for _, q := range reqs {
		d := q.asgi - usual[q.failed]
		if d < 0 {
			s.Fewer -= d
		} else {
			s.More += d
		}
		if q.rollout != "" {
			p := per[q.rollout]
			p.requests++
			p.undo -= d
			per[q.rollout] = p
		}
	}
	rate := poissonUpper95(s.Fewer + s.More)
	s.Run = int(math.Ceil(rate))
	usualSpans := rep.Result.Spans + s.Fewer - s.More
	s.SpansMin, s.SpansMax = max(0, usualSpans-s.Run), usualSpans+s.Run
	// A rollout gets its share of the run's deviations: at most what a
	// Poisson count at that share reaches 95% of the time.
	for _, r := range rep.PerRollout {
		p := per[r.ID]
		k := min(s.Run, p.requests, poissonQuantile95(rate*float64(p.requests)/float64(s.Requests)))
		s.Rollout = max(s.Rollout, k)
		s.PerRollout[r.ID] = SpreadRange{Min: max(0, r.Spans+p.undo-k), Max: r.Spans + p.undo + k}
	}
	return s
}

// poissonQuantile95 is the least k with at least 95% of a Poisson count of
// mean lambda at or below it.
func poissonQuantile95(lambda float64) int {
	term := math.Exp(-lambda)
	sum := term
	k := 0
	for sum < 0.95 {
		k++
		term *= lambda / float64(k)
		sum += term
	}
	return k
}

// poissonUpper95 is the 95% upper confidence limit of a Poisson mean after
// observing x events: the λ at which x or fewer have 5% probability
// (about 3.0 for none, the rule of three).
func poissonUpper95(x int) float64 {
	cdf := func(lambda float64) float64 {
		term, sum := math.Exp(-lambda), 0.0
		for k := 0; k <= x; k++ {
			if k > 0 {
				term *= lambda / float64(k)
			}
			sum += term
		}
		return sum
	}
	lo, hi := 0.0, float64(x)+10+4*math.Sqrt(float64(x)+1)
	for i := 0; i < 60; i++ {
		mid := (lo + hi) / 2
		if cdf(mid) > 0.05 {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// spreadReq is a kept request with a disconnect listener: whether it
// failed and its kept ASGI children.
type spreadReq struct {
	failed bool
	asgi   int32
}

// spreadFrag is a fragment version's requests under the masked specs
// asked last (TimingSpread reads a capture's every fragment: a new
// snapshot walks only the fragments that changed).
type spreadFrag struct {
	masks [2]groups.Set
	reqs  [2][]spreadReq
	n     int
	gen   uint64
}

// spreadReqs returns f's requests with a listener whose kept ASGI spans
// vary with timing, under spec, from the engine's cache by version.
func (e *Engine) spreadReqs(in *model.Interner, f *model.Fragment, spec groups.Set, eventKey model.Str) []spreadReq {
	fi := e.fragInfo(f)
	mask := spec & (fi.present | groups.Set(0).With(groups.Unclassified).With(groups.Ungated))
	if e.spread == nil || e.spreadIn != in {
		e.spread, e.spreadIn = map[uint64]*spreadFrag{}, in
	}
	sf := e.spread[f.Version]
	if sf == nil {
		sf = &spreadFrag{}
		e.spread[f.Version] = sf
	}
	sf.gen = e.spreadGen
	for i := 0; i < sf.n; i++ {
		if sf.masks[i] == mask {
			return sf.reqs[i]
		}
	}
	var reqs []spreadReq
	asgi := map[int32]int{}
	listener := map[int32]bool{}
	for i := range f.Spans {
		sp := &f.Spans[i]
		if sp.Parent < 0 || !spec.Has(fi.groups[i]) {
			continue
		}
		name := in.Str(sp.Name)
		recv := strings.HasSuffix(name, " http receive")
		if !recv && !strings.HasSuffix(name, " http send") {
			continue
		}
		asgi[sp.Parent]++
		if !recv {
			continue
		}
		if v, typed := sp.Attrs.GetKey(in, eventKey); !typed || v.String() == "http.disconnect" {
			listener[sp.Parent] = true
		}
	}
	for p := range listener {
		reqs = append(reqs, spreadReq{failed: f.Spans[p].Status == model.StatusError, asgi: int32(asgi[p])})
	}
	// The newest first; the older of two gives way.
	sf.masks[1], sf.reqs[1] = sf.masks[0], sf.reqs[0]
	sf.masks[0], sf.reqs[0] = mask, reqs
	sf.n = min(sf.n+1, 2)
	return reqs
}

// evictSpread forgets the fragments the last TimingSpread did not read,
// once they are many.
func (e *Engine) evictSpread() {
	if len(e.spread) < 1024 {
		return
	}
	for v, sf := range e.spread {
		if sf.gen != e.spreadGen {
			delete(e.spread, v)
		}
	}
}
