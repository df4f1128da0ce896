package evidence

import (
	"maps"
	"slices"
)

// Set is the evidence read from a run's files: one Outcome per attempt any
// file names, the files and what could not be read. A Set is immutable and
// safe for concurrent use; a live Reader returns a new one when files grow.
type Set struct {
	Files []File
	// Bad holds the first malformed lines by file:line; BadTotal counts
	// them all.
	Bad      []BadLine
	BadTotal int
	// RLRows and RLRewards count NeMo-RL's train-data rows and the rewards
	// they list: a position in a batch, never a rollout id.
	RLRows, RLRewards int
	// Agents are the per-agent figures of an aggregate-metrics file.
	Agents []AgentMetrics

	outcomes []Outcome
	byID     map[string]int32
	windows  []Window
}

// AgentMetrics is one agent's entry of <stem>_aggregate_metrics.json.
type AgentMetrics struct {
	Agent      string
	MeanReward float64 // agent_metrics["mean/reward"], NaN when absent
}

// Window is a model call's time window, as a capture records it, for the
// join by time where spans carry no rollout id: 16 bytes, two a row.
type Window struct {
	Start   int64  // unix nanoseconds
	Outcome int32  // index in Outcomes
	Micros  uint32 // its length
}

// End is when the call completed, unix nanoseconds.
func (w Window) End() int64 { return w.Start + int64(w.Micros)*1e3 }

// Len returns the number of attempts named.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.outcomes)
}

// Outcomes returns every attempt, in the order first named; the caller must
// not change them.
func (s *Set) Outcomes() []Outcome {
	if s == nil {
		return nil
	}
	return s.outcomes
}

// Of returns the attempt of rollout id id ("task:rollout" read as
// "task-rollout"), or nil.
func (s *Set) Of(id string) *Outcome {
	if i, ok := s.index(id); ok {
		return &s.outcomes[i]
	}
	return nil
}

func (s *Set) index(id string) (int32, bool) {
	if s == nil {
		return 0, false
	}
	i, ok := s.byID[id]
	if !ok {
		if n := NormalizeID(id); n != id {
			i, ok = s.byID[n]
		}
	}
	return i, ok
}

// Windows returns the model-call windows the files record.
func (s *Set) Windows() []Window {
	if s == nil {
		return nil
	}
	return s.windows
}

// Counts tallies the attempts by state.
func (s *Set) Counts() (succeeded, failed, dispatched, other int) {
	for i := range s.Outcomes() {
		switch s.outcomes[i].State {
		case Succeeded:
			succeeded++
		case Failed:
			failed++
		case Dispatched:
			dispatched++
		default:
			other++
		}
	}
	return
}

// builder gathers rows into outcomes; snapshot hands out immutable Sets.
type builder struct {
	outcomes []Outcome
	byID     map[string]int32
	windows  []Window
	interned map[string]string // failure classes and finding checks, shared
	agents   []AgentMetrics
	rlRows   int
	rlRew    int
	last     *Set
	shared   bool // the last Set shares outcomes: copy before the next change
}

func newBuilder() builder {
	return builder{byID: map[string]int32{}, interned: map[string]string{}}
}

func (b *builder) intern(s string) string {
	if v, ok := b.interned[s]; ok {
		return v
	}
	b.interned[s] = s
	return s
}

// at returns the outcome of id, made when new.
func (b *builder) at(id string) *Outcome {
	if b.shared {
		// The last Set holds the slice and map: the next change is made on
		// copies, so that Set stays as it was.
		b.byID = maps.Clone(b.byID)
		b.shared = false
	}
	if i, ok := b.byID[id]; ok {
		return &b.outcomes[i]
	}
	b.byID[id] = int32(len(b.outcomes))
	b.outcomes = append(b.outcomes, newOutcome(id))
	return &b.outcomes[len(b.outcomes)-1]
}

func (b *builder) snapshot(r *Reader) *Set {
	// The Set's slices are cut to their length (appending left up to half
	// again of room); the map is shared until the builder changes it.
	s := &Set{outcomes: slices.Clone(b.outcomes), byID: b.byID, windows: slices.Clone(b.windows), BadTotal: r.nbad,
		Bad: append([]BadLine(nil), r.bad...), RLRows: b.rlRows, RLRewards: b.rlRew,
		Agents: append([]AgentMetrics(nil), b.agents...)}
	b.shared = true
	for _, p := range r.order {
		t := r.files[p]
		s.Files = append(s.Files, File{Path: t.path, Kind: t.kind, Rows: t.rows, Bad: t.bad})
	}
	return s
}
