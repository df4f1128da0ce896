package report

import (
	"math"

	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gate/rollouts"
	"github.com/nemo-gym/gymtrace/gate/whatif"
)

// Variant is the pair of keys every result carries: the Gym variant whose
// groups and grammar were used, and what chose it.
type Variant struct {
	GymVariant       string `json:"gym_variant"`
	GymVariantSource string `json:"gym_variant_source"`
}

// VariantOf is v's keys, chosen by source.
func VariantOf(v *groups.Variant, source string) Variant { return Variant{v.Name, source} }

// BadLines is the bad_lines object: every line not read as a span (plain
// log text, metric and log records, broken records), with the first
// samples as file:line: reason. The file reader's caller fills it.
type BadLines struct {
	Count   int      `json:"count"`
	Skipped int      `json:"skipped"`
	Bad     int      `json:"bad"`
	Samples []string `json:"samples"`
	// Within lines that were read: spans refused as invalid, and strings
	// kept with U+FFFD for bytes that were not UTF-8.
	SpansRejected  int    `json:"spans_rejected"`
	RejectedReason string `json:"rejected_reason"`
	ValuesRepaired int    `json:"values_repaired"`
}

// Traffic is the part of check's and preview's results about what is not
// a rollout: run-level traffic, unattributed fragments, context leaks.
type Traffic struct {
	RunTraffic            RunTraffic `json:"run_traffic"`
	UnattributedFragments int        `json:"unattributed_fragments"`
	ContextLeaks          int        `json:"context_leaks"`
	ContextLeakRollouts   int        `json:"context_leak_rollouts"`
	ContextLeakDetails    []Leak     `json:"context_leak_details"`
}

// RunTraffic counts run-level spans and traces, spans per kind.
type RunTraffic struct {
	Spans  int            `json:"spans"`
	Traces int            `json:"traces"`
	Kinds  map[string]int `json:"kinds"`
}

// Leak is one process's request spans of a name created under another
// request's span: Cause is the stable code, Reason its sentence, as a
// broken hop says them.
type Leak struct {
	Service string `json:"service"`
	Span    string `json:"span"`
	Count   int    `json:"count"`
	Cause   string `json:"cause"`
	Reason  string `json:"reason"`
}

// TrafficOf is st's traffic (st nil: none).
func TrafficOf(st *rollouts.Structure) Traffic {
	if st == nil {
		return Traffic{RunTraffic: RunTraffic{Kinds: map[string]int{}}, ContextLeakDetails: []Leak{}}
	}
	t := st.Traffic()
	out := Traffic{
		RunTraffic:            RunTraffic{Spans: t.RunSpans, Traces: t.RunTraces, Kinds: t.RunKinds},
		UnattributedFragments: t.Unattributed,
		ContextLeaks:          t.LeakSpans,
		ContextLeakRollouts:   t.LeakRollouts,
		ContextLeakDetails:    []Leak{},
	}
	if out.RunTraffic.Kinds == nil {
		out.RunTraffic.Kinds = map[string]int{}
	}
	for _, l := range t.Leaks {
		out.ContextLeakDetails = append(out.ContextLeakDetails, Leak{l.Service, l.Name, l.Count, whatif.CauseLeak.Code(), whatif.CauseLeak.Sentence()})
	}
	return out
}

// Tokens is token usage, present only where spans report any.
type Tokens struct {
	Input  int64    `json:"input"`
	Output int64    `json:"output"`
	Calls  int      `json:"calls"`
	Models []string `json:"models"`
}

// TokenTotal is the capture's: the rollouts' total, and what spans
// outside every rollout report, when any do.
type TokenTotal struct {
	Tokens
	Rollouts        int     `json:"rollouts"`
	OutsideRollouts *Tokens `json:"outside_rollouts,omitempty"`
}

// TokensOf is t's shape, nil when no span reports usage.
func TokensOf(t rollouts.Tokens) *Tokens {
	if !t.Present() {
		return nil
	}
	models := t.Models
	if models == nil {
		models = []string{}
	}
	return &Tokens{Input: t.Input, Output: t.Output, Calls: t.Calls, Models: models}
}

// TokenTotalOf is nil when no span of the capture reports usage, so the
// key is absent.
func TokenTotalOf(rep rollouts.TokenReport) *TokenTotal {
	if !rep.Total.Present() && !rep.Outside.Present() {
		return nil
	}
	out := &TokenTotal{Rollouts: len(rep.PerRollout), OutsideRollouts: TokensOf(rep.Outside)}
	if t := TokensOf(rep.Total); t != nil {
		out.Tokens = *t
	} else {
		out.Models = []string{}
	}
	return out
}

// TokenReport is st's token usage (st nil: none).
func TokenReport(st *rollouts.Structure) rollouts.TokenReport {
	if st == nil {
		return rollouts.TokenReport{}
	}
	return st.Tokens()
}

// Round2 rounds to two decimals, as rates and seconds are printed.
func Round2(f float64) float64 { return float64(int64(f*100+0.5)) / 100 }

// Round4 rounds to four decimals, as shares are printed.
func Round4(f float64) float64 { return math.Round(f*1e4) / 1e4 }

// MS3 is nanoseconds as milliseconds to the microsecond.
func MS3(ns int64) float64 { return math.Round(float64(ns)/1e3) / 1e3 }

// NonNil is xs, or an empty list for nil, so a list key is never null.
func NonNil(xs []string) []string {
	if xs == nil {
		return []string{}
	}
	return xs
}
