// Package critpath finds a rollout's critical path: the chain of spans that
// owns its wall time, cut into segments that each span holds on its own (no
// child on the path running), which tile the rollout from its first start
// to its last end, and which process holds each.
//
// It reads a rollout as gate/rollouts finds it by structure and imports
// model and gate/rollouts only; never the what-if engine, receiver, tui or
// the OpenTelemetry SDK.
package critpath

import (
	"sort"
	"strings"

	"github.com/nemo-gym/gymtrace/gate/rollouts"
	"github.com/nemo-gym/gymtrace/model"
)

// Holder is the kind of process that holds a stretch of the path.
type Holder uint8

// Holders. Driver is the process that called the agent's /run (Gym's
// rollout collection, or NeMo-RL): its time on the path is admission,
// before the agent takes the rollout and after it answers.
const (
	Gap       Holder = iota // no span of the rollout is running
	Driver                  // driver admission
	Agent                   // the agent server
	Model                   // a model server
	Resources               // a resources server (tools, verify, sandboxes)
	Other                   // any other process
)

// String names the holder as --json spells it.
func (h Holder) String() string {
	switch h {
	case Driver:
		return "driver"
	case Agent:
		return "agent"
	case Model:
		return "model"
	case Resources:
		return "resources"
	case Other:
		return "other"
	}
	return "gap"
}

// Text names the holder as reports say it.
func (h Holder) Text() string {
	switch h {
	case Driver:
		return "driver admission"
	case Gap:
		return "no span"
	}
	return h.String()
}

// Segment is one stretch of the path: [Start, End) held by one span on its
// own. Span is nil for a gap between spans of a split rollout.
type Segment struct {
	Start, End int64
	Span       *model.Span
	Service    string
	Name       string // rollouts.DisplayName of the span
	Depth      int    // the span's depth in the rollout's tree
	Holder     Holder
}

// Self is the segment's length in nanoseconds.
func (s Segment) Self() int64 { return s.End - s.Start }

// Share is one holder's part of the path.
type Share struct {
	Holder   Holder
	Duration int64
}

// Path is a rollout's critical path.
type Path struct {
	RolloutID  string
	Start, End int64
	Segments   []Segment // in time order, tiling [Start, End)
	// Holders sums the segments per holder, largest first.
	Holders []Share
	// Grafted counts fragments of a split rollout hung under the CLIENT
	// span that called them (the capture lost the link); Unplaced those
	// that no span encloses, walked from the rollout's own span.
	Grafted, Unplaced int
}

// Duration is the rollout's wall time, first start to last end.
func (p *Path) Duration() int64 { return p.End - p.Start }

// node is one span of the rollout's combined tree.
type node struct {
	sp    *model.Span
	trace model.TraceID
	kids  []int
	io    []int // ASGI receive and send children, outside the walk
	depth int
	// end is the latest end in the span's subtree: a callee's SERVER span
	// often ends after its CLIENT parent (which ends when the response
	// headers arrive), and the path follows it there.
	end int64
}

// Find returns the critical path of r, a rollout of snap as gate's
// structure finds it. Fragments after the first (a split rollout, or
// pieces cut off by a broken hop) are hung under the unanswered CLIENT
// span that encloses their start, the call that made them; the walk then
// runs as in one tree. Starting at the end of the rollout's top span, it
// steps to the child whose end (clipped to the time left) is latest, down
// to a span with no child running, whose own time that is; what no span
// covers is a gap.
func Find(snap *model.Snapshot, r *model.Rollout) *Path {
	p := &Path{RolloutID: r.ID, Start: r.Start, End: r.End}
	if r.End <= r.Start || len(r.Fragments) == 0 {
		return p
	}
	in := snap.Interner()
	var nodes []node
	var tops []int
	for _, f := range r.Fragments {
		base := len(nodes)
		for i := range f.Spans {
			nodes = append(nodes, node{sp: &f.Spans[i], trace: f.Trace(i)})
		}
		for i := range f.Spans {
			if par := f.Spans[i].Parent; par >= 0 && int(par) < len(f.Spans) {
				// The ASGI middleware's receive and send spans are the
				// request span's own body I/O, not work it waits on (G3's
				// disconnect listener receives for the whole request):
				// their time is the request's.
				if asgiIO(in, &f.Spans[i], &f.Spans[par]) {
					nodes[base+int(par)].io = append(nodes[base+int(par)].io, base+i)
					continue
				}
				nodes[base+int(par)].kids = append(nodes[base+int(par)].kids, base+i)
			} else {
				tops = append(tops, base+i)
			}
		}
	}
	// The rollout's own top: the earliest start, the longest on a tie.
	sort.SliceStable(tops, func(a, b int) bool {
		x, y := nodes[tops[a]].sp, nodes[tops[b]].sp
		if x.Start != y.Start {
			return x.Start < y.Start
		}
		return x.Duration() > y.Duration()
	})
	leaf := make([]bool, len(nodes))
	for i := range nodes {
		leaf[i] = len(nodes[i].kids) == 0
	}
	var roots []int
	for i, t := range tops {
		if i == 0 {
			roots = append(roots, t)
			continue
		}
		if host := enclosingCall(nodes, leaf, t); host >= 0 {
			nodes[host].kids = append(nodes[host].kids, t)
			p.Grafted++
			continue
		}
		roots = append(roots, t)
		p.Unplaced++
	}
	for _, root := range roots {
		setDepth(nodes, root, 0)
	}
	roles := map[model.ResourceID]Holder{}
	driver := nodes[tops[0]].sp.Resource
	holder := func(id model.ResourceID) Holder {
		if h, ok := roles[id]; ok {
			return h
		}
		h := holderOf(snap, id, id == driver && nodes[tops[0]].sp.Kind == model.KindClient)
		roles[id] = h
		return h
	}
	w := walker{nodes: nodes}
	w.emit = func(i int, a, b int64) {
		if b <= a {
			return
		}
		if i < 0 {
			p.Segments = append(p.Segments, Segment{Start: a, End: b, Holder: Gap, Depth: -1})
			return
		}
		sp := nodes[i].sp
		// Outside its own interval a span holds nothing: there its body
		// I/O (a last send after the request span ended) holds the time,
		// else it is a gap. Emitted backwards, as the walk goes.
		if b > sp.End || a < sp.Start {
			if b > sp.End {
				w.children(nodes[i].io, max(a, sp.End), b, -1)
			}
			w.emit(i, max(a, sp.Start), min(b, sp.End))
			if a < sp.Start {
				w.children(nodes[i].io, a, min(b, sp.Start), -1)
			}
			return
		}
		p.Segments = append(p.Segments, Segment{Start: a, End: b, Span: sp, Service: snap.ServiceName(sp.Resource),
			Name: rollouts.DisplayName(in, sp), Depth: nodes[i].depth, Holder: holder(sp.Resource)})
	}
	// A virtual span over the whole rollout holds the roots: what none of
	// them covers is a gap.
	w.children(roots, r.Start, r.End, -1)
	// The walk emits from the end backwards.
	for i, j := 0, len(p.Segments)-1; i < j; i, j = i+1, j-1 {
		p.Segments[i], p.Segments[j] = p.Segments[j], p.Segments[i]
	}
	sum := map[Holder]int64{}
	for _, s := range p.Segments {
		sum[s.Holder] += s.Self()
	}
	for h, d := range sum {
		p.Holders = append(p.Holders, Share{h, d})
	}
	sort.Slice(p.Holders, func(i, j int) bool {
		if p.Holders[i].Duration != p.Holders[j].Duration {
			return p.Holders[i].Duration > p.Holders[j].Duration
		}
		return p.Holders[i].Holder < p.Holders[j].Holder
	})
	return p
}

// asgiIO reports whether sp is an ASGI "<request> http receive|send"
// child of the request span parent.
func asgiIO(in *model.Interner, sp, parent *model.Span) bool {
	if sp.Kind != model.KindInternal {
		return false
	}
	name, pname := in.Str(sp.Name), in.Str(parent.Name)
	rest, ok := strings.CutPrefix(name, pname+" ")
	return ok && (rest == "http receive" || rest == "http send")
}

// setDepth sets the depth and subtree end of i and its descendants.
func setDepth(nodes []node, i, d int) int64 {
	nodes[i].depth = d
	nodes[i].end = nodes[i].sp.End
	for _, k := range nodes[i].kids {
		nodes[i].end = max(nodes[i].end, setDepth(nodes, k, d+1))
	}
	for _, k := range nodes[i].io {
		nodes[i].end = max(nodes[i].end, setDepth(nodes, k, d+1))
	}
	return nodes[i].end
}

// enclosingCall is the unanswered CLIENT span (no child of its own, in
// another trace) that overlaps top's span the most, the shortest on a tie:
// the call a fragment cut off from its caller answered. Overlap, not
// containment: processes' clocks and the moment a CLIENT span starts
// differ by a few milliseconds. -1 when none overlaps.
func enclosingCall(nodes []node, leaf []bool, top int) int {
	t, trace := nodes[top].sp, nodes[top].trace
	best, bestOver := -1, int64(0)
	for i := range nodes {
		sp := nodes[i].sp
		if i == top || !leaf[i] || sp.Kind != model.KindClient || nodes[i].trace == trace {
			continue
		}
		over := min(sp.End, t.End) - max(sp.Start, t.Start)
		if over <= 0 {
			continue
		}
		if best < 0 || over > bestOver || over == bestOver && sp.Duration() < nodes[best].sp.Duration() {
			best, bestOver = i, over
		}
	}
	return best
}

// walker walks the path backwards from a point in time.
type walker struct {
	nodes []node
	emit  func(i int, a, b int64) // i < 0: a gap
}

// span walks node i over [from, until): its own time and its children's.
func (w *walker) span(i int, from, until int64) {
	w.children(w.nodes[i].kids, from, until, i)
}

// children walks [from, until) of a parent (self, -1 for the rollout)
// whose children are kids: from until back to from, the child whose end
// (clipped) is latest holds the path until its start, the parent the rest.
func (w *walker) children(kids []int, from, until int64, self int) {
	t := until
	for t > from {
		best, bestEnd := -1, int64(0)
		for _, k := range kids {
			sp := w.nodes[k].sp
			if sp.Start >= t || w.nodes[k].end <= from {
				continue
			}
			if e := min(w.nodes[k].end, t); best < 0 || e > bestEnd || e == bestEnd && sp.Start < w.nodes[best].sp.Start {
				best, bestEnd = k, e
			}
		}
		if best < 0 {
			w.emit(self, from, t)
			return
		}
		w.emit(self, bestEnd, t)
		start := max(w.nodes[best].sp.Start, from)
		w.span(best, start, bestEnd)
		t = start
	}
}

// holderOf tells a process's part from its resource: Gym's server type,
// else the driver's name, else whether it made the rollout's first call.
func holderOf(snap *model.Snapshot, id model.ResourceID, caller bool) Holder {
	res := snap.Resource(id)
	if v, ok := res.Attrs.Get(snap.Interner(), "nemo.gym.server.type"); ok {
		switch v.String() {
		case "responses_api_agents":
			return Agent
		case "responses_api_models":
			return Model
		case "resources_servers":
			return Resources
		case "orchestrator", "supervisor":
			return Driver
		}
	}
	svc := snap.ServiceName(id)
	for _, s := range []string{"/orchestrator", "/supervisor", "/rollout_collection"} {
		if strings.HasSuffix(svc, s) {
			return Driver
		}
	}
	if caller {
		return Driver
	}
	return Other
}
