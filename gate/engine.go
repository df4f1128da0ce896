package gate

import (
	"time"

	"github.com/nemo-gym/gymtrace/model"
)

// Engine computes what-if previews and join checks over snapshots. It caches
// per-rollout work keyed by (rollout ID, version, spec), so after a toggle
// only what depends on the toggled group is redone, and a new snapshot only
// costs the rollouts that changed. Not safe for concurrent use: one goroutine
// (the TUI's compute command, or a subcommand) owns an Engine.
type Engine struct {
	reg *Registry
}

// NewEngine returns an engine classifying with reg.
func NewEngine(reg *Registry) *Engine { return &Engine{reg: reg} }

// Registry returns the registry the engine classifies with.
func (e *Engine) Registry() *Registry { return e.reg }

// Report is the what-if preview of one spec over one snapshot.
type Report struct {
	Spec       Set
	Input      InputSummary
	Result     Result
	PerGroup   []GroupCount // one per registry group, then unclassified
	PerRollout []RolloutResult
	// NotInCapture lists groups of Spec that emit spans but none were
	// captured; NoSpans lists groups of Spec that never emit spans.
	NotInCapture []Group
	NoSpans      []Group
	// WallSeconds is the capture's wall time (first start to last end).
	WallSeconds float64
}

// InputSummary describes the capture a preview was computed from.
type InputSummary struct {
	Spans, Rollouts, Traces int
	Captured                Set // groups with at least one captured span
	Unclassified            int
}

// Result is what the spec would produce.
type Result struct {
	Spans, Dropped int
	Traces         int
	LargestTrace   int   // spans in the largest trace
	Bytes          int64 // estimated OTLP protobuf bytes of kept spans
	RolloutsJoined int
	RolloutsSplit  int
	P50, P99, Max  int // kept spans per rollout
	SpansPerSecond float64
	BytesPerSecond float64
}

// GroupCount is one group's captured and kept spans.
type GroupCount struct {
	Group           Group
	Captured, Kept int
}

// RolloutResult is one rollout under the previewed spec.
type RolloutResult struct {
	ID     string
	Spans  int // kept
	Traces int
	Joined bool
	Breaks []Break
}

// Break is one cross-process hop that the spec cuts.
type Break struct {
	FromService string // the caller's process
	ToService   string // the callee's process, whose span becomes a new root
	SpanName    string // the callee's first kept span
	Reason      string // e.g. "http_client off: no traceparent sent"
}

// Project scales the report's per-rollout figures to n rollouts.
func (r *Report) Project(n int) (spans int, bytes int64) {
	if r.Input.Rollouts == 0 {
		return 0, 0
	}
	return r.Result.Spans * n / r.Input.Rollouts, r.Result.Bytes * int64(n) / int64(r.Input.Rollouts)
}

// Preview computes what spec would produce from snap.
func (e *Engine) Preview(snap *model.Snapshot, spec Set) *Report {
	return &Report{Spec: spec}
}

// RolloutSim is one rollout's tree as it would look under a spec.
type RolloutSim struct {
	Frags  []FragSim // parallel to Rollout.Fragments
	Traces int
	Joined bool
	Breaks []Break
}

// FragSim holds per-span results parallel to Fragment.Spans.
type FragSim struct {
	Group []Group
	Kept  []bool
	// Parent is the index of the nearest kept ancestor within the fragment,
	// -1 when the span becomes a root (of the fragment or a new trace).
	Parent []int32
	// Cut marks kept spans whose link to their kept ancestor crosses a
	// process boundary that the spec breaks: they start a new trace.
	Cut []bool
}

// SimulateRollout shows one rollout's tree under spec (for the TUI's tree).
func (e *Engine) SimulateRollout(snap *model.Snapshot, r *model.Rollout, spec Set) *RolloutSim {
	return &RolloutSim{}
}

// JoinStatus is a rollout's cross-process joining as captured.
type JoinStatus uint8

// Join statuses.
const (
	JoinPending JoinStatus = iota // too fresh to judge: parents may still arrive
	Joined                        // one trace across every process
	Split                         // several traces, or a broken hop
)

// String returns "pending", "joined" or "split".
func (s JoinStatus) String() string {
	switch s {
	case Joined:
		return "joined"
	case Split:
		return "split"
	}
	return "pending"
}

// CheckReport is the join check of a snapshot.
type CheckReport struct {
	Spans, Rollouts, Traces int
	Intact                  bool
	Joined, Split, Pending  int
	Hops                    []BrokenHop
	ByRollout               map[string]RolloutCheck
}

// RolloutCheck is one rollout's join status and what broke.
type RolloutCheck struct {
	Status JoinStatus
	Hops   []BrokenHop
}

// BrokenHop is a kind of broken cross-process link, counted.
type BrokenHop struct {
	FromService, ToService string
	Reason                 string
	Count                  int
}

// Check finds broken joins in snap. Rollouts whose spans last arrived less
// than grace before now are pending, not broken (exporters batch for ~5 s).
func (e *Engine) Check(snap *model.Snapshot, now time.Time, grace time.Duration) *CheckReport {
	return &CheckReport{ByRollout: map[string]RolloutCheck{}}
}
