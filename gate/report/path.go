package report

import (
	"encoding/hex"
	"github.com/nemo-gym/gymtrace/gate/evidence"
	"strings"

	"github.com/nemo-gym/gymtrace/gate/critpath"
)

// Path is the result of `path --json` and the critical_path tool: a
// rollout's critical path, segment by segment, and who holds its time.
type Path struct {
	Variant
	RolloutID string `json:"rollout_id"`
	// Evidence: what Gym's files say of the rollout, when they were read.
	Evidence   *evidence.RolloutJSON `json:"evidence,omitempty"`
	DurationMS float64               `json:"duration_ms"`
	PathMS     float64               `json:"path_ms"`
	Grafted    int                   `json:"fragments_grafted"`
	Unplaced   int                   `json:"fragments_unplaced"`
	Holders    []PathHolder          `json:"holders"`
	Segments   []PathSegment         `json:"segments"`
}

// PathHolder is the time one holder (a process, or the caller) owns.
type PathHolder struct {
	Holder string  `json:"holder"`
	MS     float64 `json:"ms"`
	Share  float64 `json:"share"`
}

// PathSegment is one stretch of the path and the span that owns it.
type PathSegment struct {
	OffsetMS float64 `json:"offset_ms"`
	SelfMS   float64 `json:"self_ms"`
	Holder   string  `json:"holder"`
	Service  string  `json:"service"`
	Name     string  `json:"name"`
	Kind     string  `json:"kind"`
	SpanID   string  `json:"span_id"`
	Depth    int     `json:"depth"`
}

// Share is part over whole, 0 for an empty whole.
func Share(part, whole int64) float64 {
	if whole <= 0 {
		return 0
	}
	return float64(part) / float64(whole)
}

// NewPath is p's result for rollout id.
func NewPath(v Variant, id string, p *critpath.Path) Path {
	out := Path{Variant: v, RolloutID: id, DurationMS: MS3(p.Duration()), Grafted: p.Grafted, Unplaced: p.Unplaced,
		Holders: []PathHolder{}, Segments: []PathSegment{}}
	var sum int64
	for _, s := range p.Segments {
		sum += s.Self()
		seg := PathSegment{OffsetMS: MS3(s.Start - p.Start), SelfMS: MS3(s.Self()), Holder: s.Holder.String(), Service: s.Service,
			Name: s.Name, Depth: s.Depth}
		if s.Span != nil {
			seg.Kind, seg.SpanID = strings.ToLower(s.Span.Kind.String()), hex.EncodeToString(s.Span.SpanID[:])
		}
		out.Segments = append(out.Segments, seg)
	}
	out.PathMS = MS3(sum)
	for _, h := range p.Holders {
		out.Holders = append(out.Holders, PathHolder{Holder: h.Holder.String(), MS: MS3(h.Duration), Share: Round4(Share(h.Duration, p.Duration()))})
	}
	return out
}
