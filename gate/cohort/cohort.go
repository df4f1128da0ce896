// Package cohort compares a cohort of rollouts (those a filter selects)
// with a baseline (another filter's, or the other rollouts) and ranks the
// span names, groups, services and attribute values whose count per
// rollout, share of the rollout's time or error rate differ most, by an
// effect size.
//
// It reads rollouts as gate/rollouts finds them by structure and imports
// model and gate's stage packages only; never receiver, tui or the
// OpenTelemetry SDK.
package cohort

import (
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/nemo-gym/gymtrace/gate/evidence"
	"github.com/nemo-gym/gymtrace/gate/filter"
	"github.com/nemo-gym/gymtrace/gate/whatif"
	"github.com/nemo-gym/gymtrace/model"
)

// Kind is what a feature is.
type Kind uint8

// Feature kinds.
const (
	SpanName Kind = iota + 1 // a process's span name (rollouts.DisplayName)
	Group                    // the span group that gates the spans
	Service                  // a process
	Attr                     // an attribute value: key=value on the span or its events
	Outcome                  // what Gym's files say: turns, tokens, latency, failure=…, verdict=…
)

// String names the kind as --json spells it.
func (k Kind) String() string {
	switch k {
	case SpanName:
		return "span"
	case Group:
		return "group"
	case Service:
		return "service"
	case Attr:
		return "attribute"
	case Outcome:
		return "outcome"
	}
	return "unknown"
}

// Metric is what is compared of a feature.
type Metric uint8

// Metrics.
const (
	Count     Metric = iota + 1 // spans per rollout
	Share                       // share of the rollout's wall time the spans hold on their own
	ErrorRate                   // error spans over spans, in rollouts that have any
	Value                       // an outcome's figure, over the rollouts whose files know it
)

// String names the metric as --json spells it.
func (m Metric) String() string {
	switch m {
	case Count:
		return "count"
	case Share:
		return "share"
	case ErrorRate:
		return "error_rate"
	case Value:
		return "value"
	}
	return "unknown"
}

// Format renders a value of the metric as every face shows it.
func (m Metric) Format(v float64) string {
	switch m {
	case Count:
		return fmt.Sprintf("%.2f", v)
	case Value:
		return fmt.Sprintf("%.4g", v)
	}
	return fmt.Sprintf("%.1f%%", 100*v)
}

// Feature is one thing spans have.
type Feature struct {
	Kind Kind
	// Service is set for span names; Name is the span name, the group,
	// the service, or key=value.
	Service, Name string
}

// String is the feature as reports show it.
func (f Feature) String() string {
	if f.Kind == SpanName {
		return f.Service + " " + f.Name
	}
	return f.Name
}

// Row is one feature's metric compared between the two sides.
type Row struct {
	Feature Feature
	Metric  Metric
	// Cohort and Baseline are the metric's mean over each side's rollouts
	// (for ErrorRate, over the rollouts with such spans); N counts them.
	Cohort, Baseline   float64
	CohortN, BaselineN int
	// Same lists features whose values are exactly this row's on every
	// rollout of both sides (an attribute that only one span name has):
	// one row stands for them.
	Same []Feature
	// Effect is Cliff's delta: the chance that a cohort rollout's value
	// exceeds a baseline rollout's, less the chance it falls below, from
	// -1 to +1. Rank-based, so it needs no normal law and stays defined
	// when one side never varies.
	Effect float64
}

// Comparison is a cohort held against its baseline.
type Comparison struct {
	Cohort, Baseline []*model.Rollout
	// Overlap counts rollouts on both sides (an explicit baseline filter
	// may match cohort rollouts; they count on both).
	Overlap int
	// Rows differ between the sides (Effect not 0), largest effect first.
	Rows []Row
}

// MaxValues bounds the distinct values an attribute key may have to be
// compared value by value: more, and they are ids, paths or messages, which
// set no cohort apart.
const MaxValues = 24

// maxValueLen bounds an attribute value's length for the same reason.
const maxValueLen = 80

// sample is one rollout's figures for one feature, 24 bytes: a side
// holds one of every feature for each of its rollouts.
type sample struct {
	// count is the spans (of an outcome's figure: 1 when known).
	count, errors int32
	self          int64
	val           float64 // an outcome's figure, when count is 1
}

// Compare splits the structural rollouts of snap into the cohort (cohort
// matches) and the baseline (baseline matches; nil: every other rollout)
// and ranks what differs. An empty side is an error naming the filter.
func Compare(eng *whatif.Engine, snap *model.Snapshot, cohort, baseline *filter.Filter) (*Comparison, error) {
	return CompareWith(eng, snap, cohort, baseline, nil)
}

// CompareWith is Compare with each rollout's outcome read through outcome
// (a joined evidence set's; nil: none), so what Gym's files say — turns,
// tool calls, tokens, latency, failure class, verdict — ranks beside the
// spans.
func CompareWith(eng *whatif.Engine, snap *model.Snapshot, cohort, baseline *filter.Filter, outcome func(id string) *evidence.Outcome) (*Comparison, error) {
	return CompareKept(eng, snap, cohort, baseline, outcome, nil)
}

// CompareKept is CompareWith reading the rollouts' features from prof,
// which keeps them for the next comparison (nil: kept for this one
// alone).
func CompareKept(eng *whatif.Engine, snap *model.Snapshot, cohort, baseline *filter.Filter, outcome func(id string) *evidence.Outcome, prof *Profiles) (*Comparison, error) {
	st := eng.Structure(snap).Snap
	c := &Comparison{}
	var ai, bi []int // the sides' rollouts, by index in st.Rollouts
	for i, r := range st.Rollouts {
		in := cohort.Match(st, r)
		if in {
			c.Cohort, ai = append(c.Cohort, r), append(ai, i)
		}
		switch {
		case baseline == nil && !in:
			c.Baseline, bi = append(c.Baseline, r), append(bi, i)
		case baseline != nil && baseline.Match(st, r):
			c.Baseline, bi = append(c.Baseline, r), append(bi, i)
			if in {
				c.Overlap++
			}
		}
	}
	switch {
	case len(st.Rollouts) == 0:
		return nil, fmt.Errorf("the capture has no rollouts to compare")
	case len(c.Cohort) == 0:
		return nil, fmt.Errorf("cohort %q matches none of the %d rollouts", cohort, len(st.Rollouts))
	case len(c.Baseline) == 0 && baseline == nil:
		return nil, fmt.Errorf("cohort %q matches all %d rollouts: no other rollout is left as the baseline", cohort, len(st.Rollouts))
	case len(c.Baseline) == 0:
		return nil, fmt.Errorf("baseline %q matches none of the %d rollouts", baseline, len(st.Rollouts))
	}
	if prof == nil {
		prof = NewProfiles(eng)
	}
	prs := prof.of(st, st.Rollouts)
	prof.comparable()
	comparable := prof.cmpKey
	a, b := measure(prof, c.Cohort, pick(prs, ai), comparable, outcome), measure(prof, c.Baseline, pick(prs, bi), comparable, outcome)
	feats := map[Feature]bool{}
	for f := range a.per {
		feats[f] = true
	}
	for f := range b.per {
		feats[f] = true
	}
	zeros := func(n int) []sample { return make([]sample, n) }
	// Rows are built in a stable order so that of identical rows the
	// first kind (span name, group, service, attribute) speaks.
	order := make([]Feature, 0, len(feats))
	for f := range feats {
		order = append(order, f)
	}
	sort.Slice(order, func(i, j int) bool {
		if order[i].Kind != order[j].Kind {
			return order[i].Kind < order[j].Kind
		}
		return order[i].String() < order[j].String()
	})
	same := sameRows{seed: maphash.MakeSeed(), at: map[uint64][]sameRow{}}
	for _, f := range order {
		xa, xb := a.per[f], b.per[f]
		if xa == nil {
			xa = zeros(len(c.Cohort))
		}
		if xb == nil {
			xb = zeros(len(c.Baseline))
		}
		metrics := []Metric{Count, Share, ErrorRate}
		if f.Kind == Outcome && !strings.Contains(f.Name, "=") {
			metrics = []Metric{Value}
		} else if f.Kind == Outcome {
			metrics = []Metric{Count}
		}
		for _, m := range metrics {
			va, vb := values(m, xa, a.wall), values(m, xb, b.wall)
			if len(va) == 0 || len(vb) == 0 {
				continue
			}
			row := Row{Feature: f, Metric: m, Cohort: mean(va), Baseline: mean(vb), CohortN: len(va), BaselineN: len(vb), Effect: cliff(va, vb)}
			if row.Effect == 0 {
				continue
			}
			if i := same.find(m, va, vb); i >= 0 {
				c.Rows[i].Same = append(c.Rows[i].Same, f)
				continue
			}
			same.add(m, va, vb, len(c.Rows))
			c.Rows = append(c.Rows, row)
		}
	}
	sort.Slice(c.Rows, func(i, j int) bool { return before(c.Rows[i], c.Rows[j]) })
	return c, nil
}

// sameRows finds the row whose metric and values, rollout by rollout, a
// feature's are: by a hash of them, then compared bit for bit (as their
// printed forms would be: the shortest form of a float is its own).
type sameRows struct {
	seed maphash.Seed
	at   map[uint64][]sameRow
}

type sameRow struct {
	m      Metric
	va, vb []float64
	row    int
}

func (s *sameRows) hash(m Metric, va, vb []float64) uint64 {
	var h maphash.Hash
	h.SetSeed(s.seed)
	var b [8]byte
	h.WriteByte(byte(m))
	for _, xs := range [2][]float64{va, vb} {
		binary.LittleEndian.PutUint64(b[:], uint64(len(xs)))
		h.Write(b[:])
		for _, x := range xs {
			binary.LittleEndian.PutUint64(b[:], math.Float64bits(x))
			h.Write(b[:])
		}
	}
	return h.Sum64()
}

// find returns the row index of m's values va and vb, or -1.
func (s *sameRows) find(m Metric, va, vb []float64) int {
	for _, r := range s.at[s.hash(m, va, vb)] {
		if r.m == m && sameBits(r.va, va) && sameBits(r.vb, vb) {
			return r.row
		}
	}
	return -1
}

func (s *sameRows) add(m Metric, va, vb []float64, row int) {
	k := s.hash(m, va, vb)
	s.at[k] = append(s.at[k], sameRow{m, va, vb, row})
}

func sameBits(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return true
}

// side is one side's samples of each feature, one a rollout, and the
// rollouts' wall times.
type side struct {
	per  map[Feature][]sample
	wall []int64
}

// pick is the profiles at the indexes at.
func pick(prs []*profile, at []int) []*profile {
	out := make([]*profile, len(at))
	for i, j := range at {
		out[i] = prs[j]
	}
	return out
}

// measure sums the features of rolls from their profiles prs, the
// attribute values of comparable keys only (by key number), and their
// outcomes. Every rollout has a sample of every feature the side has,
// zero when absent.
func measure(prof *Profiles, rolls []*model.Rollout, prs []*profile, comparable []bool, outcome func(id string) *evidence.Outcome) side {
	byID := make([][]sample, len(prof.feats))
	put := func(f, count, errors int32, self int64, ri int) {
		xs := byID[f]
		if xs == nil {
			xs = make([]sample, len(rolls))
			byID[f] = xs
		}
		xs[ri].count += count
		xs[ri].self += self
		xs[ri].errors += errors
	}
	s := side{per: map[Feature][]sample{}, wall: make([]int64, 0, len(rolls))}
	for ri, r := range rolls {
		s.wall = append(s.wall, r.End-r.Start)
		if outcome != nil {
			addOutcome(s.per, ri, outcome(r.ID))
		}
		pr := prs[ri]
		for _, x := range pr.feats {
			put(x.f, x.count, x.errors, x.self, ri)
		}
		for _, x := range pr.attrs {
			if comparable[x.key] {
				put(x.f, x.count, x.errors, x.self, ri)
			}
		}
	}
	for f, xs := range s.per { // outcomes
		for len(xs) < len(rolls) {
			xs = append(xs, sample{})
		}
		s.per[f] = xs
	}
	for id, xs := range byID {
		if xs != nil {
			s.per[prof.feats[id]] = xs
		}
	}
	return s
}

// values is one metric of a feature over a side's rollouts. ErrorRate
// leaves out rollouts without such spans: a rate of nothing is no rate.
func values(m Metric, xs []sample, wall []int64) []float64 {
	out := make([]float64, 0, len(xs))
	for i, x := range xs {
		switch m {
		case Count:
			out = append(out, float64(x.count))
		case Share:
			if wall[i] > 0 {
				out = append(out, float64(x.self)/float64(wall[i]))
			}
		case ErrorRate:
			if x.count > 0 {
				out = append(out, float64(x.errors)/float64(x.count))
			}
		case Value:
			if x.count > 0 {
				out = append(out, x.val)
			}
		}
	}
	return out
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// cliff is Cliff's delta of a over b, by sorting the smaller side once
// and placing the other's values in it (a cohort of a few rollouts
// against thousands sorts a few).
func cliff(a, b []float64) float64 {
	var gt, lt int
	if len(a) < len(b) {
		lt, gt = above(b, a)
	} else {
		gt, lt = above(a, b)
	}
	return float64(gt-lt) / float64(len(a)*len(b))
}

// above counts the pairs of a value of a and one of b where a's is the
// larger (gt) and where it is the smaller (lt), by sorting b.
func above(a, b []float64) (gt, lt int) {
	sb := append([]float64(nil), b...)
	slices.Sort(sb)
	for _, x := range a {
		lo := sort.SearchFloat64s(sb, x)                                  // b values < x
		hi := sort.Search(len(sb), func(i int) bool { return sb[i] > x }) // b values <= x
		gt += lo
		lt += len(sb) - hi
	}
	return gt, lt
}

// before ranks rows: the larger effect, then the more rollouts behind it
// (an error rate over one rollout is weak evidence), then the larger
// relative difference of the means, then kind, name and metric for a
// stable order.
func before(x, y Row) bool {
	if ax, ay := math.Abs(x.Effect), math.Abs(y.Effect); ax != ay {
		return ax > ay
	}
	if nx, ny := min(x.CohortN, x.BaselineN), min(y.CohortN, y.BaselineN); nx != ny {
		return nx > ny
	}
	if rx, ry := rel(x), rel(y); rx != ry {
		return rx > ry
	}
	if x.Feature.Kind != y.Feature.Kind {
		return x.Feature.Kind < y.Feature.Kind
	}
	if x.Feature.String() != y.Feature.String() {
		return x.Feature.String() < y.Feature.String()
	}
	return x.Metric < y.Metric
}

// rel is the difference of the means over the larger of them.
func rel(r Row) float64 {
	d := math.Max(math.Abs(r.Cohort), math.Abs(r.Baseline))
	if d == 0 {
		return 0
	}
	return math.Abs(r.Cohort-r.Baseline) / d
}

// endpointKey reports keys that name a connection's ends (ports, peer
// addresses, the host a server was reached at): they tell connections
// apart, not rollouts, and the service already names the process.
func endpointKey(k string) bool {
	for _, suf := range []string{".port", ".ip", ".address", "http.host", "http.server_name"} {
		if strings.HasSuffix(k, suf) {
			return true
		}
	}
	return strings.Contains(k, ".peer.")
}

// addOutcome adds rollout ri's outcome features: its known figures as
// values, its failure class, verdict and first finding as counts of one.
func addOutcome(per map[Feature][]sample, ri int, o *evidence.Outcome) {
	if o == nil {
		return
	}
	at := func(name string) *sample {
		f := Feature{Kind: Outcome, Name: name}
		xs := per[f]
		for len(xs) <= ri {
			xs = append(xs, sample{})
		}
		per[f] = xs
		return &xs[ri]
	}
	num := func(name string, v float64, known bool) {
		if known {
			x := at(name)
			x.val, x.count = v, 1
		}
	}
	num("turns", float64(o.Turns), o.Turns >= 0)
	num("tool_calls", float64(o.Tools), o.Tools >= 0)
	num("input_tokens", float64(o.InTokens), o.InTokens >= 0)
	num("output_tokens", float64(o.OutTokens), o.OutTokens >= 0)
	num("model_calls", float64(o.Calls), o.Calls >= 0)
	num("latency_ms", o.LatencyMS, !math.IsNaN(o.LatencyMS))
	if o.Failure != "" {
		at("failure="+o.Failure).count++
	}
	if v := o.Verdict.String(); v != "" {
		at("verdict="+v).count++
	}
	if o.Finding != "" {
		at("finding="+o.Finding).count++
	}
}
