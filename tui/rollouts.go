package tui

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"net"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/cursor"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/nemo-gym/gymtrace/gate/evidence"
	"github.com/nemo-gym/gymtrace/gate/filter"
	"github.com/nemo-gym/gymtrace/gate/rollouts"
	"github.com/nemo-gym/gymtrace/gate/whatif"
	"github.com/nemo-gym/gymtrace/model"
)

// sortMode orders the rollout list.
type sortMode uint8

const (
	sortFirstSeen sortMode = iota
	sortStart
	sortDuration
	sortSpans
	sortErrors
	sortID
	sortReward // with evidence: lowest reward first
	sortTurns  // with evidence: most turns first
	sortTokens // with evidence: most tokens first
	numSortModes
)

// order says which rows come first under the mode, as the title shows it:
// the direction in words, since an arrow reads either way.
func (s sortMode) order(reverse bool) string {
	pick := func(a, b string) string {
		if reverse {
			return b
		}
		return a
	}
	switch s {
	case sortStart:
		return pick("earliest start", "latest start")
	case sortDuration:
		return pick("longest first", "shortest first")
	case sortSpans:
		return pick("most spans", "fewest spans")
	case sortErrors:
		return pick("most errors", "fewest errors")
	case sortID:
		return pick("id a→z", "id z→a")
	case sortReward:
		return pick("lowest reward", "highest reward")
	case sortTurns:
		return pick("most turns", "fewest turns")
	case sortTokens:
		return pick("most tokens", "fewest tokens")
	}
	return pick("oldest first", "newest first")
}

// String names the sort order as the panel title shows it.
func (s sortMode) String() string {
	switch s {
	case sortStart:
		return "start time"
	case sortDuration:
		return "duration"
	case sortSpans:
		return "spans"
	case sortErrors:
		return "errors"
	case sortID:
		return "id"
	case sortReward:
		return "reward"
	case sortTurns:
		return "turns"
	case sortTokens:
		return "tokens"
	}
	return "first seen"
}

// rowInfo is what the list derives from one rollout: its services (deriving
// them walks every span), its id's widths, the filter's verdict. A rollout
// in one state (one pointer, or one id and version) keeps it; the list
// holds one per snapshot rollout, by index, carried to the next snapshot
// (align): a rebuild (every key typed into the filter) reads them in
// place, with no lookup by id.
type rowInfo struct {
	r         *model.Rollout
	services  string
	servicesW int32
	idLen     int32 // len(r.ID)
	idW       int32 // its width on screen
	spansW    int32 // countWidth(r.Spans)
	// matchGen is the filter generation match is the verdict of: the
	// filter walks the rollout's spans, so it runs once per rollout and
	// filter text.
	matchGen uint32
	match    bool
	apart    bool // one of gate's Apart rows
}

// rolloutList is the panel listing rollouts.
type rolloutList struct {
	basePanel
	st   *Styles
	keys *KeyMap

	width, height int
	snap          *model.Snapshot
	rows          []*model.Rollout // sorted and filtered
	// rowIdx holds, for each of rows, its index in snap.Rollouts (infos),
	// or -1 for a row listed apart (apartInfo).
	rowIdx []int32
	// infos[i] is snap.Rollouts[i]'s; spare is the previous snapshot's
	// array, reused by the next align.
	infos, spare []rowInfo
	apartInfo    map[string]*rowInfo // the few Apart rows'
	// order is snap.Rollouts' indices in the sort mode's order (orderOf
	// says for which snapshot and mode): a new filter text picks from it
	// without sorting again, as filtering keeps a stable order.
	order   []int32
	orderOf orderKey
	join    map[string]whatif.RolloutCheck
	// countJoin says inFlight is to be counted again: the snapshot or the
	// join changed.
	countJoin bool
	haveJoin  bool

	sort    sortMode
	reverse bool
	filter  string
	// compiled is the last filter text that parsed; while a term is half
	// typed (dur>1) the list keeps it and filterErr says what is wrong.
	compiled  *filter.Filter
	filterErr string
	marked    string // the rollout marked for comparison
	input     textinput.Model
	filtering bool

	// matchWant are the rollouts the filter has yet to judge when they are
	// too many to judge on the UI goroutine (matchAsyncFrom); matching
	// says a command judges them. Until it answers, the rows stay as they
	// were.
	matchWant []int32
	matching  bool
	// gen numbers the compiled filter texts (genText the current); judged
	// is the generation matchCmd last judged every rollout for.
	gen     uint32
	genText string
	judged  uint32
	// typed numbers the edits of the filter input on a large capture,
	// where the text typed is applied only after a pause in typing
	// (filterPause): the tick of an older edit finds a newer number.
	typed uint64

	listCursor
	selected  string              // the cursor's rollout id, kept across refreshes
	selR      *model.Rollout      // the rollout selected names, as last seen: found without reading ids
	structure *rollouts.Structure // the last check's: run-level traffic, unattributed
	// leaks is how many context leaks each rollout owns (the structure's
	// LeaksByRollout): its length is the leaking rollouts check counts.
	leaks    map[string]int
	awaiting int // spans of fragments still waiting for a parent
	inFlight int // rollouts whose root has not arrived
	// Column widths only grow, so the list does not jump as data arrives.
	idW, spansW int
	// cut is how ids too wide for their column are shown, chosen for the
	// rows measured and the column width cutW: render (every cursor move)
	// reuses it.
	cut     idCut
	cutW    int
	cutOf   measureKey
	sortBuf []sortKey
	// measured is what widths and measure last ran for: their figures
	// do not depend on the rows' order, so a new sort keeps them.
	measured measureKey
	// wantW is the width that shows every id and services whole, measured
	// while wide (a screen that gives the list the room) is set.
	wantW int
	wide  bool

	// live and addrs shape the empty state: where to send spans.
	live  bool
	addrs []string

	// ev is Gym's files joined to the rollouts, nil without; evLookup
	// reads the latest join for the filter's evidence terms.
	ev       *evidence.Joined
	evLookup func(id string) *evidence.Outcome

	out string
}

func newRolloutList(st *Styles, keys *KeyMap) *rolloutList {
	return newRolloutListFor(st, keys, false, nil)
}

// newRolloutListFor is a list of a live capture (spans may still come)
// received on addrs ("grpc 127.0.0.1:4317"), which its empty state names.
func newRolloutListFor(st *Styles, keys *KeyMap, live bool, addrs []string) *rolloutList {
	in := textinput.New()
	// A static cursor: no blink ticks while typing.
	in.Cursor.SetMode(cursor.CursorStatic)
	in.Prompt = "/"
	in.PromptStyle = st.Input.Prompt
	in.Placeholder = "id, trace/span id, service, error, name; key=value status=error dur>100ms (? for help)"
	return &rolloutList{st: st, keys: keys, apartInfo: map[string]*rowInfo{}, gen: 1, input: in, idW: 8, spansW: 5, live: live, addrs: addrs}
}

func (l *rolloutList) slot() slot      { return slotRollouts }
func (l *rolloutList) name() string    { return "rollouts" }
func (l *rolloutList) view() string    { return l.out }
func (l *rolloutList) capturing() bool { return l.filtering }
func (l *rolloutList) scroll(n int)    { l.setCursor(l.cursor + n) }

func (l *rolloutList) help() []key.Binding {
	k := l.keys
	return []key.Binding{k.Expand, k.Filter, k.Sort, k.Reverse, k.Up, k.Down, k.Top, k.Bottom, k.PageUp, k.PageDown}
}

// setSize sets the content size (inside the frame).
func (l *rolloutList) setSize(w, h int) {
	l.width, l.height = w, h
	l.input.Width = max(w-3, 1)
	l.render()
}

// SetSnapshot replaces the data, keeping the cursor on its rollout.
func (l *rolloutList) SetSnapshot(s *model.Snapshot) {
	l.setSnap(s)
	l.rebuild()
}

func (l *rolloutList) setSnap(s *model.Snapshot) {
	if s != l.snap {
		l.infos, l.spare = align(l.infos, l.spare[:0], s), l.infos
		l.snap = s
		l.countJoin = true
	}
}

// alignWindow is how far align looks ahead in the previous snapshot for a
// rollout not at the place it expects: the rollouts evicted at the front,
// or moved, since then.
const alignWindow = 1024

// same reports whether a and b are one rollout in one state: the same
// published rollout, or one the analysis built again, equal in id and
// version.
func same(a, b *model.Rollout) bool {
	return a == b || a.Version == b.Version && a.ID == b.ID
}

// byVersion indexes rolls by version, for what is not where a walk in
// order expects it; a hit is checked with same.
func byVersion(n int, roll func(int) *model.Rollout) map[uint64]int {
	at := make(map[uint64]int, n)
	for k := range n {
		at[roll(k).Version] = k
	}
	return at
}

// align returns the infos of next's rollouts in buf: those of prev (the
// previous snapshot's) for the rollouts they share, fresh ones, with
// services derived, for the rest. It walks both in order, as a snapshot
// keeps the order, evicts from the front and appends; a rollout further
// ahead than alignWindow is found through an index of prev's rollouts,
// made once.
func align(prev, buf []rowInfo, next *model.Snapshot) []rowInfo {
	buf = slices.Grow(buf, len(next.Rollouts))
	var at map[uint64]int
	j := 0
	for _, r := range next.Rollouts {
		found := -1
		if j < len(prev) && prev[j].r == r {
			found = j
		} else if j < len(prev) && prev[j].r.ID == r.ID {
			if prev[j].r.Version == r.Version {
				found = j
			} else {
				j++ // changed in place: derived anew
			}
		} else {
			for k := j + 1; k < len(prev) && k <= j+alignWindow; k++ {
				if prev[k].r == r {
					found = k
					break
				}
			}
			if found < 0 && len(prev) > 0 {
				if at == nil {
					at = byVersion(len(prev), func(k int) *model.Rollout { return prev[k].r })
				}
				if k, ok := at[r.Version]; ok && same(prev[k].r, r) {
					found = k
				}
			}
		}
		if found >= 0 {
			in := prev[found]
			in.r = r
			buf = append(buf, in)
			j = found + 1
			continue
		}
		buf = append(buf, newRowInfo(next, r))
	}
	clear(prev) // the spare: it must not keep evicted rollouts alive
	return buf
}

// SetCheck records the join status of each rollout.
func (l *rolloutList) SetCheck(c *whatif.CheckReport) {
	if c != nil {
		l.join, l.haveJoin, l.countJoin = c.ByRollout, true, true
		if c.Structure != nil {
			if c.Structure != l.structure {
				l.leaks = c.Structure.LeaksByRollout()
			}
			l.structure = c.Structure
			l.awaiting = c.Awaiting
			l.setSnap(c.Structure.Snap)
			// The check judged these very rollouts: its count is theirs.
			l.inFlight, l.countJoin = c.InFlight, false
			l.rebuild()
			return
		}
	}
	l.rebuild()
}

// SetEvidence takes Gym's files as joined to the check's rollouts: a
// filter that reads them is judged again.
func (l *rolloutList) SetEvidence(j *evidence.Joined) {
	l.ev = j
	if l.compiled.UsesEvidence() {
		l.gen++
	}
	l.orderOf = orderKey{} // an evidence sort reads the new join
	l.rebuild()
}

// evCols is the evidence columns' width, 0 without evidence.
func (l *rolloutList) evCols() int {
	if l.ev == nil || l.ev.Coverage.Joined() == 0 {
		return 0
	}
	if len(l.leaks) > 0 {
		// The leak mark before them is their gap: the right-aligned
		// reward leaves it one of its own.
		return 6 + 1 + 11
	}
	return 1 + 6 + 1 + 11
}

// evidenceWant is the width that shows the evidence columns beside an id
// of up to 12 cells and the verdicts.
func (l *rolloutList) evidenceWant() int {
	return 1 + min(max(l.idW, 8), 12) + 1 + 5 + 1 + 7 + 1 + l.spansW + 1 + l.joinW() + l.evCols()
}

// outcomeCells renders a rollout's reward and outcome cells.
func (l *rolloutList) outcomeCells(id string) (reward, outcome string) {
	o, how := l.ev.Of(id)
	if o == nil {
		return "", l.st.List.Dim.Render("–")
	}
	reward = o.RewardText()
	if how == evidence.Inferred {
		reward += "≈"
	}
	switch {
	case o.Failure != "":
		outcome = l.st.Tree.Error.Render(o.Failure)
	case o.Verdict == evidence.Unhealthy:
		outcome = l.st.Tree.Error.Render("unhealthy")
	case o.Verdict == evidence.Healthy:
		outcome = "healthy"
	case o.Verdict == evidence.Unobserved:
		outcome = l.st.List.Dim.Render("unobserved")
	case o.State == evidence.Succeeded:
		outcome = l.st.List.Dim.Render("ok")
	default:
		outcome = l.st.List.Dim.Render(o.State.String())
	}
	return reward, outcome
}

// where is the filter the list applies (the last that parsed), nil when
// none: the span groups preview the same rollouts.
func (l *rolloutList) where() *filter.Filter {
	if l.filter == "" || l.compiled.Empty() {
		return nil
	}
	return l.compiled
}

// Selected returns the rollout under the cursor, or nil.
func (l *rolloutList) Selected() *model.Rollout {
	if l.cursor >= 0 && l.cursor < len(l.rows) {
		return l.rows[l.cursor]
	}
	return nil
}

// StartFilter gives the keyboard to the filter input.
func (l *rolloutList) StartFilter() tea.Cmd {
	l.filtering = true
	l.input.SetValue(l.filter)
	l.input.CursorEnd()
	cmd := l.input.Focus()
	l.render()
	return cmd
}

// CycleSort moves to the next sort order, from the top of the list: what
// a new order puts first is what the user sorted for.
func (l *rolloutList) CycleSort() {
	l.sort = (l.sort + 1) % numSortModes
	if l.sort >= sortReward && l.evCols() == 0 {
		l.sort = 0 // the outcome orders need Gym's files
	}
	l.selected, l.offset = "", 0
	l.rebuild()
}

// Reverse flips the sort order, from the top of the list.
func (l *rolloutList) Reverse() {
	l.reverse = !l.reverse
	l.selected, l.offset = "", 0
	l.rebuild()
}

// filterDone is sent when the filter input closes with enter.
type filterDoneMsg struct{}

// filterPause is how long typing must pause before the text typed is
// applied, on a capture of at least filterPauseFrom spans; smaller ones
// apply each key at once.
var (
	filterPause     = 150 * time.Millisecond
	filterPauseFrom = 100_000
)

// filterTypedMsg ends a pause in typing after edit seq of the filter.
type filterTypedMsg struct{ seq uint64 }

// applyTyped applies the text typed when msg is the tick of the last
// edit; it reports whether the filter changed.
func (l *rolloutList) applyTyped(msg filterTypedMsg) bool {
	if msg.seq != l.typed || !l.filtering || l.input.Value() == l.filter {
		return false
	}
	l.filter = l.input.Value()
	l.rebuild()
	return true
}

// typing reports text typed into the filter and not yet applied.
func (l *rolloutList) typing() bool { return l.filtering && l.input.Value() != l.filter }

// handle takes keys while the panel has focus.
func (l *rolloutList) handle(km tea.KeyMsg, _ *env) (bool, tea.Cmd) {
	if l.filtering {
		switch {
		case key.Matches(km, l.keys.Back):
			l.filtering = false
			l.input.Blur()
			l.filter = ""
			l.typed++
			l.rebuild()
			return true, nil
		case km.Type == tea.KeyEnter:
			// Enter applies what is typed at once, pause or not.
			l.typed++
			if v := l.input.Value(); v != l.filter {
				l.filter = v
				l.rebuild()
			}
			if l.filterErr != "" {
				return true, nil // the error stays shown until the filter parses
			}
			l.filtering = false
			l.input.Blur()
			l.render()
			return true, func() tea.Msg { return filterDoneMsg{} }
		case km.Type == tea.KeyUp || km.Type == tea.KeyDown:
			l.move(km)
			return true, nil
		}
		var cmd tea.Cmd
		l.input, cmd = l.input.Update(km)
		l.typed++
		switch v := l.input.Value(); {
		case v == l.filter:
			l.render()
		case l.snap != nil && l.snap.Stats.Stored >= filterPauseFrom:
			// Each text applied judges every rollout and previews the
			// span groups anew: on a large capture only the text the
			// typing pauses at is. The input shows every key at once.
			l.render()
			seq := l.typed
			cmd = tea.Batch(cmd, tea.Tick(filterPause, func(time.Time) tea.Msg { return filterTypedMsg{seq} }))
		default:
			l.filter = v
			l.rebuild()
		}
		return true, cmd
	}
	switch {
	case key.Matches(km, l.keys.Back) && l.filter != "":
		l.filter = ""
		l.rebuild()
		return true, nil
	case key.Matches(km, l.keys.Filter):
		return true, l.StartFilter()
	}
	return l.move(km), nil
}

func (l *rolloutList) move(km tea.KeyMsg) bool {
	if !l.moveKey(l.keys, km, len(l.rows), l.listHeight()) {
		return false
	}
	l.setCursor(l.cursor)
	return true
}

// click selects the row at content line y.
func (l *rolloutList) click(y int) {
	if i := l.rowAt(y, 2, len(l.rows)); i >= 0 {
		l.setCursor(i)
	}
}

func (l *rolloutList) setCursor(i int) {
	l.cursor = clamp(i, 0, len(l.rows)-1)
	if r := l.Selected(); r != nil {
		l.selected, l.selR = r.ID, r
	}
	l.render()
}

// listHeight is the number of rollout rows that fit.
func (l *rolloutList) listHeight() int {
	h := l.height - 2 // title and column header
	if l.filtering {
		h--
	}
	return h
}

// rebuild sorts and filters the rollouts, then renders.
func (l *rolloutList) rebuild() {
	if l.snap == nil {
		l.render()
		return
	}
	if f, err := filter.Parse(l.filter); err != nil {
		var fe *filter.Error
		if errors.As(err, &fe) {
			l.filterErr = fmt.Sprintf("%q: %s", fe.Term, fe.Reason)
		} else {
			l.filterErr = err.Error()
		}
	} else {
		if f.UsesEvidence() && l.evLookup != nil {
			f = f.WithEvidence(l.evLookup)
		}
		l.compiled, l.filterErr = f, ""
	}
	if text := l.compiled.String(); text != l.genText {
		l.gen++
		l.genText = text
	}
	l.matchWant = nil
	judge := !l.compiled.Empty()
	if judge {
		var want []int32
		for i := range l.infos {
			if l.infos[i].matchGen != l.gen {
				want = append(want, int32(i))
			}
		}
		// New rollouts under a filter already judged are judged here, so
		// that a flood cannot keep the rows waiting.
		if l.judged != l.gen && (len(want) > matchAsyncFrom || l.spansOf(want) > matchAsyncSpans) {
			l.matchWant = want
			l.render()
			return
		}
		for _, i := range want {
			in := &l.infos[i]
			in.match, in.matchGen = l.compiled.Match(l.snap, in.r), l.gen
		}
	}
	if l.countJoin {
		l.countJoin = false
		l.inFlight = 0
		if len(l.join) > 0 {
			for i := range l.infos {
				if c, ok := l.join[l.infos[i].r.ID]; ok && c.InFlight {
					l.inFlight++
				}
			}
		}
	}
	order := l.sorted()
	rows, at := l.rows[:0], l.rowIdx[:0]
	for k := range order {
		if l.reverse {
			k = len(order) - 1 - k
		}
		i := order[k]
		if in := &l.infos[i]; !judge || in.match {
			rows = append(rows, in.r)
			at = append(at, i)
		}
	}
	// What is not a rollout is listed last, as what it is: run-level
	// traffic by kind, and the fragments no rollout could be named for.
	if st := l.structure; st != nil && !judge {
		for _, r := range st.Apart() {
			if r.ID == rollouts.UnattributedRow && r.Spans <= l.awaiting {
				continue // all still waiting for a parent: counted in the title
			}
			rows = append(rows, r)
			at = append(at, -1)
		}
	}
	l.rows, l.rowIdx = rows, at
	l.cursor = l.find(rows)
	if r := l.Selected(); r != nil && !isApart(r.ID) {
		// A run-level row the cursor merely started on (probes arrive
		// before any rollout) is not held once rollouts come.
		l.selected, l.selR = r.ID, r
	}
	if k := l.measureKey(); k != l.measured {
		l.widths()
		l.measure()
		l.measured = k
	}
	l.render()
}

// find is the row of the selected rollout, 0 when it is not listed: by
// pointer first, which reads no id.
func (l *rolloutList) find(rows []*model.Rollout) int {
	if l.selected == "" {
		return 0
	}
	if l.selR != nil {
		if i := slices.Index(rows, l.selR); i >= 0 {
			return i
		}
	}
	for i, r := range rows {
		if r.ID == l.selected {
			return i
		}
	}
	return 0
}

// orderKey names what order was sorted for.
type orderKey struct {
	snap *model.Snapshot
	sort sortMode
}

// sorted returns snap.Rollouts' indices in the sort mode's order, stably,
// sorting only for a new snapshot or mode.
func (l *rolloutList) sorted() []int32 {
	k := orderKey{l.snap, l.sort}
	if k == l.orderOf && len(l.order) == len(l.infos) {
		return l.order
	}
	l.orderOf = k
	order := slices.Grow(l.order[:0], len(l.infos))
	for i := range l.infos {
		order = append(order, int32(i))
	}
	l.order = order
	l.sortRows(order)
	return order
}

// measureKey names the set of rows: the snapshot, the filter, what is
// listed apart, the width asked for.
type measureKey struct {
	snap      *model.Snapshot
	filter    string
	structure *rollouts.Structure
	awaiting  int
	wide      bool
	rows      int
}

func (l *rolloutList) measureKey() measureKey {
	return measureKey{l.snap, l.compiled.String(), l.structure, l.awaiting, l.wide, len(l.rows)}
}

// sortKey is a row's sort key beside its place in the snapshot, which
// breaks ties: a stable order with the keys inline sorts a long list several
// times faster than a stable sort that reads each rollout.
type sortKey struct {
	key int64
	pos int32
}

// sortRows orders indices into infos (in snapshot order) by the sort
// mode, stably.
func (l *rolloutList) sortRows(order []int32) {
	var key func(r *model.Rollout) int64
	switch l.sort {
	case sortStart:
		key = func(r *model.Rollout) int64 { return r.Start }
	case sortDuration:
		key = func(r *model.Rollout) int64 { return -(r.End - r.Start) }
	case sortSpans:
		key = func(r *model.Rollout) int64 { return -int64(r.Spans) }
	case sortErrors:
		key = func(r *model.Rollout) int64 { return -int64(r.Errors) }
	case sortID:
		slices.SortStableFunc(order, func(a, b int32) int { return strings.Compare(l.infos[a].r.ID, l.infos[b].r.ID) })
		return
	case sortReward, sortTurns, sortTokens:
		// Rollouts the files say nothing of come last, whatever the order.
		const unknown = math.MaxInt64 / 2
		mode := l.sort
		key = func(r *model.Rollout) int64 {
			o, _ := l.ev.Of(r.ID)
			switch {
			case o == nil:
				return unknown
			case mode == sortReward && o.HasReward():
				return int64(math.Round(o.Reward * 1e6))
			case mode == sortTurns && o.Turns >= 0:
				return -int64(o.Turns)
			case mode == sortTokens && o.InTokens >= 0:
				return -int64(o.InTokens) - int64(max(o.OutTokens, 0))
			}
			return unknown
		}
	default:
		return
	}
	keys := slices.Grow(l.sortBuf[:0], len(order))
	for _, i := range order {
		keys = append(keys, sortKey{key(l.infos[i].r), i})
	}
	slices.SortFunc(keys, func(a, b sortKey) int {
		if c := cmp.Compare(a.key, b.key); c != 0 {
			return c
		}
		return cmp.Compare(a.pos, b.pos)
	})
	for i := range keys {
		order[i] = keys[i].pos
	}
	l.sortBuf = keys[:0]
}

// idWidth is ansi.StringWidth(id), at once for plain ASCII.
func idWidth(id string) int {
	for i := 0; i < len(id); i++ {
		if c := id[i]; c < 0x20 || c >= 0x7f {
			return ansi.StringWidth(id)
		}
	}
	return len(id)
}

// widths sets the column widths of every row render needs.
func (l *rolloutList) widths() {
	idW, spansW := int32(l.idW), int32(l.spansW)
	for i := range l.rows {
		in := l.infoAt(i)
		idW = max(idW, in.idLen)
		spansW = max(spansW, in.spansW)
	}
	l.idW, l.spansW = int(idW), int(spansW)
}

// idCutFor is the cut of the listed rollout ids at column width w,
// chosen again only when the rows or the width changed.
func (l *rolloutList) idCutFor(w int) idCut {
	if l.cutW == w && l.cutOf == l.measured {
		return l.cut
	}
	ids := make([]string, 0, len(l.rows))
	for i, r := range l.rows {
		if l.rowIdx[i] >= 0 {
			ids = append(ids, r.ID)
		}
	}
	l.cut, l.cutW, l.cutOf = chooseCut(ids, w), w, l.measured
	return l.cut
}

// countWidth is len(fmtCount(n)), without the string for most counts.
func countWidth(n int) int {
	if n < 0 || n >= 10_000 {
		return len(fmtCount(int64(n)))
	}
	w := 1
	for ; n >= 10; n /= 10 {
		w++
	}
	return w
}

// measure sets wantW, the width that shows every id and services whole,
// when a wide screen asks for it (measuring reads every row's services).
// Run-level rows (probes of every server) would claim room for lists no
// rollout has, and before the analysis has found the rollouts, so would
// the store's stand-ins.
func (l *rolloutList) measure() {
	l.wantW = 0
	if !l.wide || l.structure == nil {
		return
	}
	svcW, idLen := int32(0), int32(0)
	for _, i := range l.rowIdx {
		if i >= 0 {
			in := &l.infos[i]
			svcW = max(svcW, in.servicesW)
			idLen = max(idLen, in.idW)
		}
	}
	if idLen > 0 {
		l.wantW = 1 + int(idLen) + 1 + 5 + 1 + 7 + 1 + l.spansW + 1 + l.joinW() + 1 + int(svcW)
	}
}

// isApart reports whether a row id is one of gate's Apart rows.
func isApart(id string) bool {
	return strings.HasPrefix(id, rollouts.RunRowPrefix) || id == rollouts.UnattributedRow
}

// matchAsyncFrom and matchAsyncSpans are how many rollouts, and spans in
// them, the filter may judge on the UI goroutine: each judgement may walk
// every span of the rollout, and a new filter text judges them all again.
var (
	matchAsyncFrom  = 2000
	matchAsyncSpans = 100_000
)

// spansOf counts the spans of the rollouts at want, up to past
// matchAsyncSpans.
func (l *rolloutList) spansOf(want []int32) int {
	n := 0
	for _, i := range want {
		if n += l.infos[i].r.Spans; n > matchAsyncSpans {
			break
		}
	}
	return n
}

// matchMsg carries the filter's verdicts on rollouts of snap, judged off
// the UI goroutine: ok[k] is the verdict on snap.Rollouts[at[k]].
type matchMsg struct {
	gen   uint32
	snap  *model.Snapshot
	rolls []*model.Rollout
	at    []int32
	ok    []bool
}

// matchCmd judges matchWant off the UI goroutine, unless a command
// already does.
func (l *rolloutList) matchCmd() tea.Cmd {
	if len(l.matchWant) == 0 || l.matching {
		return nil
	}
	l.matching = true
	f, snap, at, gen := l.compiled, l.snap, l.matchWant, l.gen
	rolls := make([]*model.Rollout, len(at))
	for k, i := range at {
		rolls[k] = l.infos[i].r
	}
	return func() tea.Msg {
		m := matchMsg{gen: gen, snap: snap, rolls: rolls, at: at, ok: make([]bool, len(rolls))}
		for k, r := range rolls {
			m.ok[k] = f.Match(snap, r)
		}
		return m
	}
}

// setMatches installs verdicts judged by matchCmd; those of a filter text
// no longer typed are dropped. Verdicts on an older snapshot go to the
// rollouts the current one still has.
func (l *rolloutList) setMatches(m matchMsg) {
	l.matching = false
	if m.gen == l.gen {
		l.judged = m.gen
		if m.snap == l.snap {
			for k, i := range m.at {
				l.infos[i].match, l.infos[i].matchGen = m.ok[k], m.gen
			}
		} else {
			at := byVersion(len(m.rolls), func(k int) *model.Rollout { return m.rolls[k] })
			for i := range l.infos {
				in := &l.infos[i]
				if k, ok := at[in.r.Version]; ok && in.matchGen != m.gen && same(m.rolls[k], in.r) {
					in.match, in.matchGen = m.ok[k], m.gen
				}
			}
		}
	}
	l.rebuild()
}

// infoAt is the derived text of row i.
func (l *rolloutList) infoAt(i int) *rowInfo {
	if at := l.rowIdx[i]; at >= 0 {
		return &l.infos[at]
	}
	r := l.rows[i]
	// Few, and rebuilt with every structure: cached by id and version.
	if in := l.apartInfo[r.ID]; in != nil && in.r.Version == r.Version {
		return in
	}
	in := newRowInfo(l.snap, r)
	l.apartInfo[r.ID] = &in
	return &in
}

// newRowInfo derives the services of a rollout of snap.
func newRowInfo(snap *model.Snapshot, r *model.Rollout) rowInfo {
	var res []model.ResourceID
	for _, f := range r.Fragments {
		for i := range f.Spans {
			if sp := &f.Spans[i]; !slices.Contains(res, sp.Resource) {
				res = append(res, sp.Resource)
			}
		}
	}
	svc := make([]string, len(res))
	for i, id := range res {
		svc[i] = shortService(snap.ServiceName(id))
	}
	sort.Strings(svc)
	in := rowInfo{r: r, services: strings.Join(svc, ","), idLen: int32(len(r.ID)), idW: int32(idWidth(r.ID)),
		spansW: int32(countWidth(r.Spans)), apart: isApart(r.ID)}
	in.servicesW = int32(ansi.StringWidth(in.services))
	return in
}

// joinW is the join column's width: the verdict, and after it the leak
// mark when the capture has context leaks.
func (l *rolloutList) joinW() int {
	if len(l.leaks) > 0 {
		return 9 + 1
	}
	return 9
}

// joinLeakCell is the join column's cell: the verdict, then the leak mark
// on a rollout that owns a context leak (not a join break: the verdict
// stays as it is).
func (l *rolloutList) joinLeakCell(id string) string {
	c := l.joinCell(id)
	if len(l.leaks) == 0 {
		return c
	}
	mark := " "
	if l.leaks[id] > 0 {
		mark = l.st.Tree.Leak.Render(glyphLeak)
	}
	return fit(c, 9) + mark // the shorter verdicts pad it apart
}

// joinCell renders a rollout's join status.
func (l *rolloutList) joinCell(id string) string {
	if !l.haveJoin {
		return l.st.List.Dim.Render("…")
	}
	c, ok := l.join[id]
	if !ok {
		switch {
		case strings.HasPrefix(id, rollouts.RunRowPrefix):
			return l.st.List.Dim.Render("run-level")
		case id == rollouts.UnattributedRow:
			return l.st.Join.Split.Render("no owner")
		}
		return l.st.List.Dim.Render("?")
	}
	switch c.Status {
	case whatif.Joined:
		return l.st.Join.Joined.Render("✓ joined")
	case whatif.Split:
		return l.st.Join.Split.Render(glyphSplit + " split")
	}
	if c.InFlight {
		// Its spans are here; the call that started it is not yet.
		return l.st.Join.Pending.Render("… in flight")
	}
	return l.st.Join.Pending.Render("… pending")
}

// render caches the panel's text; View only returns it.
func (l *rolloutList) render() {
	if l.width <= 0 || l.height <= 0 {
		l.out = ""
		return
	}
	total := 0
	if l.snap != nil {
		total = len(l.snap.Rollouts)
	}
	head := fmt.Sprintf("Rollouts %d", total)
	if l.filter != "" {
		// Rollouts only: the run-level rows below them match no filter.
		n := 0
		for _, i := range l.rowIdx {
			if i >= 0 {
				n++
			}
		}
		head = fmt.Sprintf("Rollouts %d/%d", n, total)
	}
	// Parts in the order shown, each with its rank: on a narrow panel the
	// highest ranks give way first, whole, rather than the line being cut.
	parts := []titlePart{{"sort: " + l.sort.order(l.reverse), 1}}
	if l.inFlight > 0 {
		parts = append(parts, titlePart{fmtCount(int64(l.inFlight)) + " in flight", 2})
	}
	if n := l.awaiting; n > 0 {
		text := countNoun(n, "span") + " await parents"
		if n == 1 {
			text = "1 span awaits its parent"
		}
		parts = append(parts, titlePart{text, 3})
	}
	if st := l.structure; st != nil {
		if st.RunSpans > 0 {
			parts = append(parts, titlePart{"run-level " + fmtCount(int64(st.RunSpans)), 5})
		}
		if n := len(st.Unattributed); n > 0 && l.awaiting == 0 {
			parts = append(parts, titlePart{fmt.Sprintf("%d unattributed", n), 4})
		}
	}
	if ev := l.ev; ev != nil {
		c := ev.Coverage
		var text string
		switch r := ev.Rewards; {
		case r.Mean != nil:
			text = fmt.Sprintf("reward avg %.2g", *r.Mean)
			if c.Joined() < c.Rollouts {
				text += fmt.Sprintf(" (%d/%d joined)", c.Joined(), c.Rollouts)
			}
		}
		if text != "" {
			parts = append(parts, titlePart{text, 1})
		}
	}
	if l.filter != "" && !l.filtering {
		parts = append(parts, titlePart{"/" + l.filter, 0})
	}
	if len(l.matchWant) > 0 || l.typing() {
		parts = append(parts, titlePart{"filtering…", 0})
	}
	lines := []string{l.st.Panel.Title.Render(fitTitle(l.width, head, parts))}

	spansW, joinW := l.spansW, l.joinW()
	// The id gives way first: the state and join verdicts are never cut.
	idW := clamp(l.width-(1+1+5+1+7+1+spansW+1+joinW), 8, min(l.idW, max(l.width/2, 8)))
	evW := l.evCols()
	if evW > 0 && l.width-evW < 1+8+1+5+1+7+1+spansW+1+joinW {
		evW = 0 // too narrow: the join verdict keeps its room
	}
	if evW > 0 {
		idW = clamp(l.width-evW-(1+1+5+1+7+1+spansW+1+joinW), 8, idW)
	}
	cols := func(gut, id, status, dur, spans, join, reward, outcome, svc string) string {
		line := gut + fit(id, idW) + " " + fit(status, 5) + " " + fitRight(dur, 7) + " " + fitRight(spans, spansW) + " " + fit(join, joinW)
		if evW > 0 {
			line += fitRight(reward, evW-1-11) + " " + fit(outcome, 11)
		}
		rest := l.width - (1 + idW + 1 + 5 + 1 + 7 + 1 + spansW + 1 + joinW + evW)
		if rest > 2 {
			line += " " + fit(svc, rest-1)
		}
		return clip(line, l.width)
	}
	lines = append(lines, l.st.Panel.Column.Render(cols(" ", "rollout", "state", "time", "spans", "join", "reward", "outcome", "services")))

	// A cut id must still tell the rollouts apart (one run trace, or a few
	// shared by many rollouts, gives them all one start).
	cut := l.idCutFor(idW)
	h := l.listHeight()
	l.follow(h, len(l.rows))
	for i := l.offset; i < len(l.rows) && i < l.offset+h; i++ {
		r := l.rows[i]
		in := l.infoAt(i)
		status := l.st.Join.Joined.Render("ok")
		if r.Errors > 0 {
			status = l.st.Tree.Error.Render(fmt.Sprintf("%s %d", glyphError, r.Errors))
		}
		gut := " "
		if r.ID == l.marked {
			gut = glyphMarked
		}
		if i == l.cursor {
			gut = "›"
		}
		var reward, outcome string
		if evW > 0 && !in.apart {
			reward, outcome = l.outcomeCells(r.ID)
		}
		id := r.ID
		if !in.apart {
			id = cut.apply(r.ID, idW)
		}
		line := cols(gut, id, status, fmtDur(r.End-r.Start), fmtCount(int64(r.Spans)), l.joinLeakCell(r.ID), reward, outcome, in.services)
		if i == l.cursor {
			line = l.st.List.Selected.Render(fit(line, l.width))
		}
		lines = append(lines, line)
	}
	if len(l.rows) == 0 {
		var msg []string
		switch {
		case l.filter != "":
			msg = []string{"no rollout matches " + fmt.Sprintf("%q", l.filter)}
		case l.live && l.snap != nil && l.snap.Stats.Stored > 0:
			msg = []string{"no NeMo Gym rollout yet in " + countNoun(int(l.snap.Stats.Stored), "span")}
		case l.live:
			msg = emptyLive(l.addrs)
			if hintWidth(msg)+2 > l.width {
				// Too narrow to copy from: the waterfall beside says it.
				msg = msg[:1]
			}
		case l.snap != nil:
			msg = []string{"no NeMo Gym rollout in the capture"}
		default:
			msg = []string{"loading…"}
		}
		for _, m := range msg {
			lines = append(lines, l.st.List.Dim.Render(clip("  "+m, l.width)))
		}
	}
	if l.filtering {
		lines = padLinesSlice(lines, l.height-1)
		if l.filterErr != "" {
			// Whole, as the CLI prints it: the valid values end the text.
			el := wrap("filter "+l.filterErr, l.width-2)
			if n := len(lines) - 2; len(el) > n {
				el = el[len(el)-max(n, 1):] // the end names what is accepted
			}
			for i, e := range el {
				lines[len(lines)-len(el)+i] = l.st.Tree.Error.Render("  " + e)
			}
		}
		lines = append(lines, clip(l.input.View(), l.width))
	}
	l.out = padLines(lines, l.height)
}

// emptyLive is a live list's empty state: where spans are received and
// how to point NeMo Gym's exporters at it, lines to copy whole.
func emptyLive(addrs []string) []string {
	var grpc, http string
	for _, a := range addrs {
		kind, addr, _ := strings.Cut(a, " ")
		switch kind {
		case "grpc":
			grpc = loopback(addr)
		case "http":
			http = loopback(addr)
		}
	}
	out := []string{"waiting for spans on " + strings.Join(addrs, " · ")}
	if grpc == "" && http == "" {
		return out
	}
	out = append(out, "point NeMo Gym at it (telemetry enabled, span_groups all):", "  export NEMO_GYM_OTEL_EXPORTER=otlp")
	if grpc != "" {
		out = append(out, "  export OTEL_EXPORTER_OTLP_ENDPOINT=http://"+grpc)
		if _, port, err := net.SplitHostPort(http); err == nil {
			out = append(out, "or OTLP/HTTP: OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf, port "+port)
		}
	} else {
		out = append(out, "  export OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf", "  export OTEL_EXPORTER_OTLP_ENDPOINT=http://"+http)
	}
	return out
}

// hintWidth is the widest line of lines.
func hintWidth(lines []string) int {
	w := 0
	for _, l := range lines {
		w = max(w, ansi.StringWidth(l))
	}
	return w
}

// loopback is addr with an unspecified host (all interfaces) written as
// the loopback address, which a process on this machine can dial.
func loopback(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// padLinesSlice is padLines that keeps the slice form.
func padLinesSlice(lines []string, height int) []string {
	if len(lines) > height {
		return lines[:max(height, 0)]
	}
	for len(lines) < height {
		lines = append(lines, "")
	}
	return lines
}
