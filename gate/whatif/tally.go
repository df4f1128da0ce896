package whatif

import (
	"time"

	"github.com/nemo-gym/gymtrace/model"
)

// JobState says whether the run a capture holds is still going.
type JobState uint8

// Job states.
const (
	JobUnknown JobState = iota // nothing says yet: no end-of-run span seen
	JobRunning                 // an end-of-run span was seen, spans still arrive
	JobEnded                   // an end-of-run span was seen, then quiet
)

// String names the state as the status line and the JSON show it.
func (s JobState) String() string {
	switch s {
	case JobRunning:
		return "running"
	case JobEnded:
		return "ended"
	}
	return "unknown"
}

// Tally is a capture's rollouts counted once, by the structure rules, as
// every face shows them: the headless status line, the JSON summaries, the
// TUI's header, list and verdict. Faces render it; none counts on its own.
type Tally struct {
	Spans, Traces int
	// Rollouts are found by structure: the agent's POST /run and all it
	// causes (or the rules' anchor where server is off). Spans that belong
	// to no Gym rollout never make one.
	Rollouts int
	// InFlight counts the rollouts whose root has not arrived yet (live
	// only): their spans are counted as theirs, not as rollouts of their own.
	InFlight int
	// Joined, Split and Pending are the rollouts' join verdicts; Pending
	// holds those too fresh to judge, InFlight among them.
	Joined, Split, Pending int
	// AwaitingSpans are spans that wait for a parent and belong to no
	// rollout yet (live only).
	AwaitingSpans int
	// RunSpans and RunTraces count run-level traffic: probes, gym.job,
	// /aggregate_metrics, start-up, a caller's own spans.
	RunSpans, RunTraces int
	// Unattributed counts fragments no rollout could be named for.
	Unattributed, UnattributedSpans int
	Job                             JobState
}

// JobQuiet is how long without new spans after an end-of-run span before a
// run counts as ended (model.Snapshot.SpansAt: metric points and logs do
// not count).
const JobQuiet = 3 * time.Second

// Tally counts the report's rollouts; now and quiet tell whether the run
// has ended (quiet <= 0: as soon as an end-of-run span is in).
func (r *CheckReport) Tally(now time.Time, quiet time.Duration) Tally {
	st := r.Structure
	t := Tally{Spans: r.Spans, Traces: r.Traces, Rollouts: r.Rollouts, InFlight: r.InFlight,
		Joined: r.Joined, Split: r.Split, Pending: r.Pending, AwaitingSpans: r.Awaiting}
	if st == nil {
		return t
	}
	tr := st.Traffic()
	t.RunSpans, t.RunTraces = tr.RunSpans, tr.RunTraces
	t.Unattributed, t.UnattributedSpans = tr.Unattributed, tr.UnattributedSpans
	if st.RunEnded() {
		t.Job = JobRunning
		// Quiet since spans last arrived: the store publishes for metric
		// points and logs too, and a run keeps exporting those once over.
		last := st.Snap.SpansAt
		if last.IsZero() {
			last = st.Snap.Taken
		}
		if r.InFlight == 0 && (quiet <= 0 || now.Sub(last) >= quiet) {
			t.Job = JobEnded
		}
	}
	return t
}

// inFlight reports whether a rollout still waits for its root: one of its
// fragments hangs under a parent that has not arrived (the driver's call,
// or a caller's span, exported when the rollout is over).
func inFlight(r *model.Rollout) bool {
	for _, f := range r.Fragments {
		if f.Orphan() {
			return true
		}
	}
	return false
}

// LiveGrace is how long, beside a live job, a rollout's last span may be
// before it is judged: parents may still arrive within it.
const LiveGrace = 5 * time.Second
