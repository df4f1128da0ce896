package report

import (
	"github.com/nemo-gym/gymtrace/gate/evidence"
	"github.com/nemo-gym/gymtrace/gate/whatif"
)

// Diff is the result of `diff --json` and the compare tool: two rollouts
// side by side (docs/json.md).
type Diff struct {
	Variant
	// AEvidence and BEvidence: what Gym's files say of each, with --evidence.
	AEvidence       *evidence.RolloutJSON `json:"a_evidence,omitempty"`
	BEvidence       *evidence.RolloutJSON `json:"b_evidence,omitempty"`
	A               DiffSide              `json:"a"`
	B               DiffSide              `json:"b"`
	Operations      []DiffOp              `json:"operations"`
	OnlyA           []DiffSpan            `json:"only_a"`
	OnlyB           []DiffSpan            `json:"only_b"`
	Moved           []DiffMove            `json:"moved"`
	Changed         []DiffOp              `json:"changed"`
	ErrorsOnlyA     []DiffSpan            `json:"errors_only_a"`
	ErrorsOnlyB     []DiffSpan            `json:"errors_only_b"`
	FirstDivergence *Divergence           `json:"first_divergence"`
	// Page is set by a face that cut the span lists (the MCP compare
	// tool); the CLI prints them whole.
	Page *Page `json:"page,omitempty"`
}

type DiffSide struct {
	RolloutID  string   `json:"rollout_id"`
	Files      []string `json:"files"`
	Spec       string   `json:"spec"`
	Spans      int      `json:"spans"`
	Errors     int      `json:"errors"`
	Traces     int      `json:"traces"`
	DurationMS float64  `json:"duration_ms"`
}

type DiffOp struct {
	Service  string  `json:"service"`
	Name     string  `json:"name"`
	CountA   int     `json:"count_a"`
	CountB   int     `json:"count_b"`
	ErrorsA  int     `json:"errors_a"`
	ErrorsB  int     `json:"errors_b"`
	TotalMSA float64 `json:"total_ms_a"`
	TotalMSB float64 `json:"total_ms_b"`
	MaxMSA   float64 `json:"max_ms_a"`
	MaxMSB   float64 `json:"max_ms_b"`
	SelfMSA  float64 `json:"self_ms_a"`
	SelfMSB  float64 `json:"self_ms_b"`
}

type DiffSpan struct {
	Service string   `json:"service"`
	Name    string   `json:"name"`
	SpanID  string   `json:"span_id"`
	Path    []string `json:"path"`
	Status  string   `json:"status"`
	Message string   `json:"status_message,omitempty"`
}

// DiffMove is a span on both sides under another parent.
type DiffMove struct {
	Service string   `json:"service"`
	Name    string   `json:"name"`
	SpanID  string   `json:"span_id"`
	PathA   []string `json:"path_a"`
	PathB   []string `json:"path_b"`
}

type Divergence struct {
	Path []string `json:"path"`
	A    string   `json:"a"`
	B    string   `json:"b"`
}

// NewDiff is d's result: A read from filesA under specA ("": as
// captured), B from filesB under specB.
func NewDiff(v Variant, d *whatif.Diff, filesA, filesB []string, specA, specB string) Diff {
	out := Diff{
		Variant: v,
		A:       diffSideOf(d.A, filesA, specA), B: diffSideOf(d.B, filesB, specB),
		Operations: []DiffOp{}, Changed: []DiffOp{},
		OnlyA: diffSpansOf(d.OnlyA), OnlyB: diffSpansOf(d.OnlyB), Moved: []DiffMove{},
		ErrorsOnlyA: diffSpansOf(d.ErrorsA), ErrorsOnlyB: diffSpansOf(d.ErrorsB),
	}
	for _, mv := range d.Moved {
		out.Moved = append(out.Moved, DiffMove{Service: mv.Service, Name: mv.Name, SpanID: mv.SpanID.String(), PathA: mv.Path, PathB: mv.PathB})
	}
	for _, o := range d.Operations {
		out.Operations = append(out.Operations, diffOpOf(o))
	}
	for _, o := range d.Changed {
		out.Changed = append(out.Changed, diffOpOf(o))
	}
	if d.First != nil {
		out.FirstDivergence = &Divergence{Path: d.First.Path, A: d.First.A, B: d.First.B}
	}
	return out
}

func diffSideOf(s whatif.DiffSummary, files []string, spec string) DiffSide {
	return DiffSide{RolloutID: s.Rollout, Files: files, Spec: spec, Spans: s.Spans, Errors: s.Errors, Traces: s.Traces, DurationMS: MS2(s.DurationNS)}
}

func diffOpOf(o whatif.OpDiff) DiffOp {
	return DiffOp{
		Service: o.Service, Name: o.Name, CountA: o.CountA, CountB: o.CountB, ErrorsA: o.ErrorsA, ErrorsB: o.ErrorsB,
		TotalMSA: MS2(o.TotalNSA), TotalMSB: MS2(o.TotalNSB), MaxMSA: MS2(o.MaxNSA), MaxMSB: MS2(o.MaxNSB),
		SelfMSA: MS2(o.SelfNSA), SelfMSB: MS2(o.SelfNSB),
	}
}

func diffSpansOf(ss []whatif.DiffSpan) []DiffSpan {
	out := []DiffSpan{}
	for _, s := range ss {
		out = append(out, DiffSpan{Service: s.Service, Name: s.Name, SpanID: s.SpanID.String(), Path: s.Path, Status: s.Status.String(), Message: s.Message})
	}
	return out
}
