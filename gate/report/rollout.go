package report

import (
	"github.com/nemo-gym/gymtrace/gate/evidence"
	"sort"
	"time"

	"github.com/nemo-gym/gymtrace/gate/whatif"
	"github.com/nemo-gym/gymtrace/model"
)

// Status is the result of the status tool: the tally every face shows
// (rollouts found by structure, in flight, joined, split, pending, the
// run's state) and what the store dropped. Keys shared with the
// `serve --headless --json` summary keep its meaning.
type Status struct {
	Variant
	Live                  bool             `json:"live"`
	SpansReceived         int64            `json:"spans_received"`
	SpansStored           int              `json:"spans_stored"`
	Traces                int              `json:"traces"`
	Rollouts              int              `json:"rollouts"`
	InFlight              int              `json:"in_flight"`
	RolloutsJoined        int              `json:"rollouts_joined"`
	RolloutsSplit         int              `json:"rollouts_split"`
	RolloutsPending       int              `json:"rollouts_pending"`
	AwaitingSpans         int              `json:"awaiting_spans"`
	RunSpans              int              `json:"run_level_spans"`
	UnattributedFragments int              `json:"unattributed_fragments"`
	Job                   string           `json:"job"`
	Services              map[string]int64 `json:"services"`
	SpansRefused          int64            `json:"spans_refused"`
	SpansEvicted          int64            `json:"spans_evicted"`
	RolloutsEvicted       int64            `json:"rollouts_evicted"`
	Duplicates            int64            `json:"duplicates"`
	Spec                  string           `json:"spec"`
	SpecSource            string           `json:"spec_source"`
	BadLines              *BadLines        `json:"bad_lines,omitempty"`
	// Evidence sums up Gym's outcome files and their join, when given.
	Evidence *evidence.SummaryJSON `json:"evidence,omitempty"`
}

// NewStatus is t over snap, the store's own snapshot.
func NewStatus(v Variant, snap *model.Snapshot, t whatif.Tally, live bool, s Setting) Status {
	out := Status{Variant: v, Live: live, SpansReceived: snap.Stats.Accepted, SpansStored: snap.Stats.Stored,
		Traces: snap.Stats.Traces, Rollouts: t.Rollouts, InFlight: t.InFlight, RolloutsJoined: t.Joined,
		RolloutsSplit: t.Split, RolloutsPending: t.Pending, AwaitingSpans: t.AwaitingSpans, RunSpans: t.RunSpans,
		UnattributedFragments: t.Unattributed, Job: t.Job.String(), Services: Services(snap),
		SpansRefused: snap.Stats.Refused, SpansEvicted: snap.Stats.EvictedSpans, RolloutsEvicted: snap.Stats.EvictedRollouts,
		Duplicates: snap.Stats.Duplicates, Spec: s.Spec, SpecSource: s.Source}
	return out
}

// Services is the stored spans per service.name.
func Services(snap *model.Snapshot) map[string]int64 {
	out := map[string]int64{}
	for id, n := range snap.Services {
		if n > 0 {
			out[snap.ServiceName(model.ResourceID(id))] += n
		}
	}
	return out
}

// RolloutRow is one rollout as a list shows it.
type RolloutRow struct {
	RolloutID  string  `json:"rollout_id"`
	Status     string  `json:"status"` // joined, split or pending
	InFlight   bool    `json:"in_flight,omitempty"`
	Spans      int     `json:"spans"`
	Errors     int     `json:"errors"`
	Traces     int     `json:"traces"`
	Fragments  int     `json:"fragments"`
	Start      string  `json:"start"` // RFC 3339, UTC, to the microsecond
	DurationMS float64 `json:"duration_ms"`
	// Hops counts the rollout's broken hops (explain lists them).
	Hops     int      `json:"broken_hops"`
	Services []string `json:"services"`
	Tokens   *Tokens  `json:"tokens,omitempty"`
	// Evidence is what Gym's outcome files say of the rollout (reward,
	// failure class, verdict, task), when they were given.
	Evidence *evidence.RolloutJSON `json:"evidence,omitempty"`
}

// NewRolloutRow is r's row, judged by rc (its check) and with tok.
func NewRolloutRow(snap *model.Snapshot, r *model.Rollout, rc whatif.RolloutCheck, tok *Tokens) RolloutRow {
	row := RolloutRow{RolloutID: r.ID, Status: rc.Status.String(), InFlight: rc.InFlight, Spans: r.Spans, Errors: r.Errors,
		Traces: int(r.Traces), Fragments: len(r.Fragments), Start: Time(r.Start), DurationMS: MS3(r.End - r.Start),
		Hops: len(rc.Hops), Services: RolloutServices(snap, r), Tokens: tok}
	return row
}

// Time is unix nanoseconds as RFC 3339 in UTC.
func Time(ns int64) string {
	return time.Unix(0, ns).UTC().Format("2006-01-02T15:04:05.000000Z07:00")
}

// RolloutServices is the service names of r's spans, sorted.
func RolloutServices(snap *model.Snapshot, r *model.Rollout) []string {
	seen := map[model.ResourceID]bool{}
	for _, f := range r.Fragments {
		for i := range f.Spans {
			seen[f.Spans[i].Resource] = true
		}
	}
	out := make([]string, 0, len(seen))
	for id := range seen {
		out = append(out, snap.ServiceName(id))
	}
	sort.Strings(out)
	return out
}
