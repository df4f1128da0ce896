package report

import (
	"github.com/nemo-gym/gymtrace/gate/whatif"
	"github.com/nemo-gym/gymtrace/model"
)

// Page is how a bounded list says what it left out: Total items matched,
// the list holds those from the cursor on up to the limit, Truncated when
// more follow (NextCursor fetches them), and Notes says what was clamped.
type Page struct {
	Total      int      `json:"total"`
	Truncated  bool     `json:"truncated"`
	NextCursor string   `json:"next_cursor,omitempty"`
	Notes      []string `json:"notes"`
}

// RolloutList is the result of the list_rollouts tool.
type RolloutList struct {
	Variant
	Filter   string       `json:"filter"`
	Sort     string       `json:"sort"`
	Rollouts []RolloutRow `json:"rollouts"`
	Page
}

// RolloutDetail is the result of the get_rollout tool: the rollout's row,
// its processes, error spans, broken hops and its span tree to a depth.
type RolloutDetail struct {
	Variant
	RolloutRow
	PerService []ServiceCount `json:"per_service"`
	ErrorSpans []SpanRef      `json:"error_spans"`
	BrokenHops []Hop          `json:"broken_hops_detail"`
	Depth      int            `json:"depth"`
	Tree       []Node         `json:"tree"`
	Page
}

// ServiceCount is one process's spans and error spans in a rollout.
type ServiceCount struct {
	Service string `json:"service"`
	Spans   int    `json:"spans"`
	Errors  int    `json:"errors"`
}

// SpanRef names a span briefly.
type SpanRef struct {
	SpanID        string `json:"span_id"`
	Service       string `json:"service"`
	Name          string `json:"name"`
	StatusMessage string `json:"status_message,omitempty"`
}

// Node is one span of a rollout's tree, in depth-first order: Depth 0 is
// a fragment's top (a rollout with several fragments was split, or waits
// for a parent), Children counts its children whether listed or not.
type Node struct {
	SpanID     string  `json:"span_id"`
	Depth      int     `json:"depth"`
	Fragment   int     `json:"fragment"`
	Service    string  `json:"service"`
	Name       string  `json:"name"`
	Kind       string  `json:"kind"`
	Status     string  `json:"status"`
	OffsetMS   float64 `json:"offset_ms"`
	DurationMS float64 `json:"duration_ms"`
	Children   int     `json:"children"`
}

// Spans is the result of the get_spans tool.
type Spans struct {
	Spans    []SpanDetail `json:"spans"`
	NotFound []string     `json:"not_found"`
	Notes    []string     `json:"notes"`
}

// SpanDetail is everything stored of one span.
type SpanDetail struct {
	SpanID        string            `json:"span_id"`
	TraceID       string            `json:"trace_id"`
	ParentID      string            `json:"parent_id"`
	RolloutID     string            `json:"rollout_id"` // "" for run-level or unattributed spans
	Service       string            `json:"service"`
	Name          string            `json:"name"`
	Kind          string            `json:"kind"`
	Status        string            `json:"status"`
	StatusMessage string            `json:"status_message,omitempty"`
	Start         string            `json:"start"`
	DurationMS    float64           `json:"duration_ms"`
	Attributes    map[string]string `json:"attributes"`
	Resource      map[string]string `json:"resource"`
	Events        []Event           `json:"events"`
	Links         int               `json:"links"`
}

// Event is a span event, at its offset from the span's start.
type Event struct {
	Name       string            `json:"name"`
	OffsetMS   float64           `json:"offset_ms"`
	Attributes map[string]string `json:"attributes"`
}

// Explain is the result of the explain tool: why a rollout is split (or
// why a hop breaks across the capture), cause by cause, with the fix.
type Explain struct {
	Variant
	RolloutID string `json:"rollout_id,omitempty"`
	Status    string `json:"status"`
	Traces    int    `json:"traces"`
	Fragments int    `json:"fragments"`
	// Summary is one sentence: joined, or what splits it and the fix.
	Summary string `json:"summary"`
	Hops    []Hop  `json:"hops"`
	// Fixes are the distinct fixes of the hops, most spans first.
	Fixes []string `json:"fixes"`
	// SuspectFragments counts unattributed fragments the rollout may own.
	SuspectFragments int `json:"suspect_fragments"`
}

// HopOfBroken is one rollout's broken hop.
func HopOfBroken(h whatif.BrokenHop) Hop {
	reason := h.Reason
	if reason == "" { // a rollout's own hops are said when shown
		reason = h.Cause.Sentence(h.Args[:]...)
	}
	return Hop{FromService: h.FromService, ToService: h.ToService, SpanName: h.SpanName, Cause: h.Cause.Code(),
		Reason: reason, Fix: h.Cause.Fix(), Count: h.Count, Rollouts: 1}
}

// Attributes decodes a into strings, as a user would type them.
func Attributes(in *model.Interner, a model.Attrs) map[string]string {
	out := map[string]string{}
	a.Each(in, func(k string, v model.Value) bool {
		out[k] = v.String()
		return true
	})
	return out
}
