package report

import (
	"github.com/nemo-gym/gymtrace/gate/evidence"
	"sort"

	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gate/whatif"
)

// Check is the result of `check --json` and the check tool.
type Check struct {
	Variant
	Spans           int      `json:"spans"`
	Rollouts        int      `json:"rollouts"`
	Traces          int      `json:"traces"`
	Intact          bool     `json:"intact"`
	RolloutsJoined  int      `json:"rollouts_joined"`
	RolloutsSplit   int      `json:"rollouts_split"`
	RolloutsPending int      `json:"rollouts_pending"`
	BrokenHops      []Hop    `json:"broken_hops"`
	BadLines        BadLines `json:"bad_lines"`
	SplitRollouts   []string `json:"split_rollouts"`
	Spec            string   `json:"spec"`
	SpecSource      string   `json:"spec_source"`
	SpecWarning     string   `json:"spec_warning"`
	// Tokens and RolloutTokens are present only when spans report token
	// usage (a model backend with GenAI tracing).
	Tokens        *TokenTotal        `json:"tokens,omitempty"`
	RolloutTokens map[string]*Tokens `json:"rollout_tokens,omitempty"`
	// With evidence: what Gym's files say, and of each rollout joined.
	Evidence        *evidence.SummaryJSON            `json:"evidence,omitempty"`
	RolloutEvidence map[string]*evidence.RolloutJSON `json:"rollout_evidence,omitempty"`
	// Page is set by a face that cut the lists (the MCP check tool on a
	// large capture); the CLI prints them whole.
	Page *Page `json:"page,omitempty"`
	Traffic
}

// Hop is a broken hop, or a hop a spec cuts, summed: between which
// processes, on which request, why (Cause is the reason's stable code) and
// the fix when a group mends it.
type Hop struct {
	FromService string `json:"from_service"`
	ToService   string `json:"to_service"`
	SpanName    string `json:"span_name"`
	Cause       string `json:"cause"`
	Reason      string `json:"reason"`
	Fix         string `json:"fix,omitempty"`
	Count       int    `json:"count"`
	Rollouts    int    `json:"rollouts"`
}

// HopOf is b's shape.
func HopOf(b whatif.BreakSum) Hop {
	return Hop{FromService: b.FromService, ToService: b.ToService, SpanName: b.SpanName, Cause: b.Cause.Code(),
		Reason: b.Reason, Fix: b.Cause.Fix(), Count: b.Spans, Rollouts: b.Rollouts}
}

// Setting is the span_groups setting a check judges against: the spec as
// given and where it came from.
type Setting struct {
	Spec, Source string
}

// SpecWarning is what check says of a setting: that it cannot join traces,
// or that Gym would not apply it as written.
func SpecWarning(reg *groups.Registry, spec string) string {
	res := reg.Resolve(spec)
	warning := whatif.SpecWarning(res.Set)
	if e := res.Effect(); e != "" {
		warning = e
		if w := whatif.SpecWarning(res.Set); w != "" && !res.Off {
			warning += "; " + w
		}
	}
	return warning
}

// NewCheck is rep's result under the setting s, read with reg.
func NewCheck(v Variant, reg *groups.Registry, rep *whatif.CheckReport, s Setting, bad BadLines) Check {
	out := Check{
		Spans: rep.Spans, Rollouts: rep.Rollouts, Traces: rep.Traces, Intact: rep.Intact,
		RolloutsJoined: rep.Joined, RolloutsSplit: rep.Split, RolloutsPending: rep.Pending,
		BrokenHops: []Hop{}, BadLines: bad, SplitRollouts: []string{},
		Spec: s.Spec, SpecSource: s.Source, SpecWarning: SpecWarning(reg, s.Spec), Variant: v,
		Traffic: TrafficOf(rep.Structure),
	}
	if out.BadLines.Samples == nil {
		out.BadLines.Samples = []string{}
	}
	toks := TokenReport(rep.Structure)
	out.Tokens = TokenTotalOf(toks)
	for id, t := range toks.PerRollout {
		if out.RolloutTokens == nil {
			out.RolloutTokens = map[string]*Tokens{}
		}
		out.RolloutTokens[id] = TokensOf(t)
	}
	for _, h := range rep.HopSummary() {
		out.BrokenHops = append(out.BrokenHops, HopOf(h))
	}
	for id, rc := range rep.ByRollout {
		if rc.Status == whatif.Split {
			out.SplitRollouts = append(out.SplitRollouts, id)
		}
	}
	sort.Strings(out.SplitRollouts)
	return out
}
