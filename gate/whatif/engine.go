package whatif

import (
	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gate/rollouts"
)

// Report is the what-if preview of one spec over one snapshot.
type Report struct {
	// Structure is the capture's rollouts, run-level traffic and what
	// could not be attributed, as the report counted them.
	Structure  *rollouts.Structure
	Spec       groups.Set
	Input      InputSummary
	Result     Result
	PerGroup   []GroupCount // one per registry group, then unclassified
	PerRollout []RolloutResult
	// NotInCapture lists groups of Spec that emit spans but none were
	// captured; NoSpans lists groups of Spec that never emit spans.
	NotInCapture []groups.Group
	NoSpans      []groups.Group
	// MetricsSeen holds, for each group of NoSpans that gates a metric
	// (GroupInfo.Metric) which the capture holds, the data points received
	// for that metric: the group is at work although it emits no spans.
	// Nil when there is none.
	MetricsSeen map[groups.Group]int64
	// WallSeconds is the capture's wall time (first start to last end).
	WallSeconds float64
}

// InputSummary describes the capture a preview was computed from.
type InputSummary struct {
	Spans, Rollouts, Traces int
	Captured                groups.Set // groups with at least one captured span
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
	Group          groups.Group
	Captured, Kept int
}

// RolloutResult is one rollout under the previewed spec. Results are shared
// with the engine's cache: read them, never modify them.
type RolloutResult struct {
	ID     string
	Spans  int // kept
	Traces int
	// Joined is true when the kept spans form exactly one trace. A rollout
	// with no kept spans is neither joined nor split.
	Joined bool
	Breaks []Break
	// Groups holds the captured and kept spans of each group present in the
	// rollout, in registry order, then unclassified.
	Groups []GroupCount
	// Captured is the rollout's captured span count; Fragments its captured
	// fragments (connected pieces of trace).
	Captured, Fragments int
	// Bytes is the kept spans' encoded size, without batch overhead.
	Bytes int64
}

// Split reports whether the rollout's kept spans form several traces.
func (r *RolloutResult) Split() bool { return r.Traces > 1 }

// Break is one cross-process hop that the spec cuts.
type Break struct {
	FromService string // the caller's process
	ToService   string // the callee's process, whose span becomes a new root
	SpanName    string // the callee's first kept span
	Cause       Cause
	Reason      string // Cause's sentence, e.g. "http_client off: no traceparent sent"
	Count       int    // spans cut at this hop in the rollout
}

// Project scales the report's per-rollout figures to n rollouts.
func (r *Report) Project(n int) (spans int, bytes int64) {
	if r.Input.Rollouts == 0 {
		return 0, 0
	}
	return r.Result.Spans * n / r.Input.Rollouts, r.Result.Bytes * int64(n) / int64(r.Input.Rollouts)
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
	Group []groups.Group
	Kept  []bool
	// Parent is the index of the nearest kept ancestor within the fragment,
	// -1 when the span becomes a root (of the fragment or a new trace).
	Parent []int32
	// Cut is, for a kept span whose link to its kept ancestor crosses a
	// process boundary that the spec breaks (it starts a new trace), why
	// the link breaks; CauseNone where it holds. The same cause as the
	// rollout's Breaks count for the span.
	Cut []Cause
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
	Structure *rollouts.Structure
	// Awaiting counts spans of unattributed fragments still waiting for a
	// parent inside the grace window: not broken yet.
	Awaiting                int
	Spans, Rollouts, Traces int
	Intact                  bool
	Joined, Split, Pending  int
	// InFlight counts, live (a grace window set), the rollouts whose root
	// has not arrived: pending whatever their age.
	InFlight  int
	Hops      []BrokenHop
	ByRollout map[string]RolloutCheck
}

// RolloutCheck is one rollout's join status and what broke.
type RolloutCheck struct {
	Status JoinStatus
	// InFlight marks a pending rollout whose root has not arrived (live).
	InFlight bool
	Hops     []BrokenHop
}

// BrokenHop is a kind of broken cross-process link, counted: caller and
// callee, the hop's span (the request as the callee names it, e.g. "POST
// /v1/responses"; "" when the finding names none) and the reason.
type BrokenHop struct {
	FromService, ToService string
	SpanName               string
	Cause                  Cause
	Args                   [2]string // what Cause's words name: processes, kinds, span names
	Reason                 string    // Cause's sentence with Args
	Count                  int
	// Rollouts is, in CheckReport.Hops, how many judged rollouts show the
	// hop; 0 in a rollout's own list.
	Rollouts int
}

// Short is the hop's cause in a few words, for one-line views.
func (h BrokenHop) Short() string { return h.Cause.Short(h.Args[:]...) }

// newHop is a hop whose reason is cause's sentence with args.
func newHop(from, to, span string, cause Cause, args ...string) BrokenHop {
	h := BrokenHop{FromService: from, ToService: to, SpanName: span, Cause: cause, Reason: cause.Sentence(args...), Count: 1}
	copy(h.Args[:], args)
	return h
}

// sameHop reports whether a and b are the same hop, counts aside: the
// same processes, span and reason. A hop may not have its reason yet
// (Cause's sentence with Args): the same cause and arguments say the same.
func sameHop(a, b BrokenHop) bool {
	if a.FromService != b.FromService || a.ToService != b.ToService || a.SpanName != b.SpanName {
		return false
	}
	return a.Cause == b.Cause && a.Args == b.Args || a.reason() == b.reason()
}

// reason is the hop's Reason, said now when it has none yet.
func (h *BrokenHop) reason() string {
	if h.Reason == "" {
		return h.Cause.Sentence(h.Args[:]...)
	}
	return h.Reason
}
