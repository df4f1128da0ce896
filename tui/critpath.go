package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/nemo-gym/gymtrace/gate/critpath"
	"github.com/nemo-gym/gymtrace/model"
)

// glyphPath fills the cells of a bar where its span holds the rollout's
// critical path on its own.
const glyphPath = '▓'

// pathMarks is the waterfall's critical path (P): computed in Update when
// shown and the rollout changes, read by render.
type pathMarks struct {
	on   bool
	of   *model.Rollout // the rollout the path is of: a new version is a new *Rollout
	path *critpath.Path
	// segs holds each span's own stretches of the path.
	segs map[*model.Span][][2]int64
}

// TogglePath shows or hides the critical path of the waterfall's rollout.
func (t *traceView) TogglePath() {
	t.marks.on = !t.marks.on
	t.marks.path, t.marks.segs, t.marks.of = nil, nil, nil
	t.syncPath()
	t.render()
}

// syncPath computes the path of the shown rollout when it is on and stale.
func (t *traceView) syncPath() {
	mk := &t.marks
	if !mk.on || t.r == nil || t.snap == nil {
		mk.path, mk.segs, mk.of = nil, nil, nil
		return
	}
	if mk.path != nil && mk.of == t.r {
		return
	}
	mk.of = t.r
	mk.path = critpath.Find(t.snap, t.r)
	mk.segs = map[*model.Span][][2]int64{}
	for _, s := range mk.path.Segments {
		if s.Span != nil {
			mk.segs[s.Span] = append(mk.segs[s.Span], [2]int64{s.Start, s.End})
		}
	}
}

// pathLine is the path's summary, a line of its own under the title so
// the title keeps its counts: who holds the rollout's time, largest first,
// in w cells (the long names give way to short ones, then the smallest
// shares go). "" when the path is off or not known.
func (t *traceView) pathLine(w int) string {
	p := t.marks.path
	if !t.marks.on || p == nil || p.Duration() <= 0 {
		return ""
	}
	share := func(h critpath.Share, short bool) string {
		name := h.Holder.Text()
		if short {
			name = h.Holder.String()
		}
		return fmt.Sprintf("%s %.0f%%", name, 100*float64(h.Duration)/float64(p.Duration()))
	}
	for _, short := range []bool{false, true} {
		for n := len(p.Holders); n >= 1; n-- {
			var parts []string
			for _, h := range p.Holders[:n] {
				parts = append(parts, share(h, short))
			}
			more := ""
			if n < len(p.Holders) {
				more = " · …"
			}
			for _, head := range []string{"critical path held by ", "path: "} {
				l := string(glyphPath) + " " + head + strings.Join(parts, " · ") + more
				if ansi.StringWidth(l) <= w {
					return l
				}
			}
		}
	}
	return clip(string(glyphPath)+" path", w)
}

// onPath reports whether sp holds a stretch of the path on its own.
func (t *traceView) onPath(sp *model.Span) bool {
	return t.marks.on && len(t.marks.segs[sp]) > 0
}

// headLines is how many lines the waterfall draws above its rows: the
// title, the path's line when shown, the column heads.
func (t *traceView) headLines() int {
	if t.marks.on && !t.preview && t.r != nil {
		return 3
	}
	return 2
}

// paintPath marks, among a bar's cells, those where sp holds the path.
func (t *traceView) paintPath(sp *model.Span, cells []rune, a, b int) {
	if !t.marks.on {
		return
	}
	for _, s := range t.marks.segs[sp] {
		pa, pb := barCells(s[0], s[1], t.r.Start, t.r.End, len(cells))
		for i := max(pa, a); i < min(pb, b); i++ {
			cells[i] = glyphPath
		}
	}
}
