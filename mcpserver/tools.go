package mcpserver

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nemo-gym/gymtrace/gate/cohort"
	"github.com/nemo-gym/gymtrace/gate/critpath"
	"github.com/nemo-gym/gymtrace/gate/evidence"
	"github.com/nemo-gym/gymtrace/gate/filter"
	"github.com/nemo-gym/gymtrace/gate/report"
	"github.com/nemo-gym/gymtrace/gate/whatif"
	"github.com/nemo-gym/gymtrace/model"
)

// Bounds of the tools' answers: a client asking for more gets the most,
// and a note saying so.
const (
	DefaultLimit    = 50  // list_rollouts rows
	MaxLimit        = 500 // list_rollouts rows
	DefaultDepth    = 3   // get_rollout tree depth
	MaxDepth        = 64
	DefaultNodes    = 200 // get_rollout tree nodes
	MaxNodes        = 2000
	MaxSpanIDs      = 20 // get_spans
	MaxErrorSpans   = 20 // get_rollout's error spans
	DefaultTopRows  = 20 // cohort rows
	MaxCohortRowCap = 200
	MaxCohortIDs    = 100 // each side's rollout_ids
)

// clamp bounds n to [1, most] (0: def), saying what it did in notes.
func clamp(name string, n, def, most int, notes *[]string) int {
	switch {
	case n == 0:
		return def
	case n < 0:
		*notes = append(*notes, fmt.Sprintf("%s %d is below 1: %d used", name, n, def))
		return def
	case n > most:
		*notes = append(*notes, fmt.Sprintf("%s %d clamped to %d, the most one call returns; page on with next_cursor", name, n, most))
		return most
	}
	return n
}

type noInput struct{}

// StatusInput takes nothing.
type StatusInput = noInput

// ListInput selects, orders and pages rollouts.
type ListInput struct {
	Filter string `json:"filter,omitempty" jsonschema:"gymtrace's filter language (the CLI's --where), e.g. 'status=error service=policy_model dur>2s'; empty: every rollout"`
	Sort   string `json:"sort,omitempty" jsonschema:"order: start (default, capture order), duration, spans, errors, traces, id or reward (with evidence); prefix - for descending, e.g. -duration"`
	Limit  int    `json:"limit,omitempty" jsonschema:"rows to return, 1-500 (default 50)"`
	Cursor string `json:"cursor,omitempty" jsonschema:"next_cursor of the previous page"`
}

// RolloutInput names a rollout.
type RolloutInput struct {
	RolloutID string `json:"rollout_id" jsonschema:"the rollout's id, as list_rollouts gives it"`
}

// GetRolloutInput names a rollout and how much of its tree to return.
type GetRolloutInput struct {
	RolloutID string `json:"rollout_id" jsonschema:"the rollout's id, as list_rollouts gives it"`
	Depth     int    `json:"depth,omitempty" jsonschema:"tree depth below each fragment's top, 0-64 (default 3)"`
	MaxNodes  int    `json:"max_nodes,omitempty" jsonschema:"tree nodes to return, 1-2000 (default 200)"`
	Cursor    string `json:"cursor,omitempty" jsonschema:"next_cursor of the previous page of the tree"`
}

// SpansInput names spans.
type SpansInput struct {
	SpanIDs   []string `json:"span_ids" jsonschema:"span ids, 16 hex digits each, at most 20"`
	RolloutID string   `json:"rollout_id,omitempty" jsonschema:"look only in this rollout (faster on a large store)"`
}

// CheckInput narrows the check.
type CheckInput struct {
	Filter string `json:"filter,omitempty" jsonschema:"only rollouts matching this filter (the CLI's --where)"`
	Spec   string `json:"spec,omitempty" jsonschema:"the span_groups the capture was made with, for the advice (default: the setting in force)"`
	Limit  int    `json:"limit,omitempty" jsonschema:"split_rollouts listed (and rollouts in rollout_tokens, rollout_evidence), 1-1000 (default 100)"`
}

// ExplainInput names a rollout, or nothing for the capture's hops.
type ExplainInput struct {
	RolloutID string `json:"rollout_id,omitempty" jsonschema:"the rollout to explain; empty: the capture's broken hops, summed"`
}

// CohortInput is two filters.
type CohortInput struct {
	Cohort   string `json:"cohort" jsonschema:"filter selecting the cohort, e.g. 'status=error'"`
	Baseline string `json:"baseline,omitempty" jsonschema:"filter selecting the baseline; empty: every other rollout"`
	Top      int    `json:"top,omitempty" jsonschema:"rows, most different first, 1-200 (default 20)"`
}

func (s *Server) addTools() {
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: new(bool)}
	add := func(name, title, desc string) *mcp.Tool {
		return &mcp.Tool{Name: name, Title: title, Description: desc, Annotations: ro}
	}
	mcp.AddTool(s.srv, add("status", "Status",
		"The tally of the capture or live run: rollouts found by structure, in flight, joined, split and pending, the run's state (unknown, running, ended), spans per service, and what the store dropped. Start here."), s.status)
	mcp.AddTool(s.srv, add("list_rollouts", "List rollouts",
		"Rollouts matching a filter (the CLI's --where grammar), sorted, one page at a time: id, join status, spans, errors, traces, duration, services, tokens. Page on with next_cursor while truncated."), s.listRollouts)
	mcp.AddTool(s.srv, add("get_rollout", "Get a rollout",
		"One rollout: its row, spans and errors per service, error spans, broken hops and its span tree to a depth (depth-first, each node's children counted). An unknown id's error names the nearest ids."), s.getRollout)
	mcp.AddTool(s.srv, add("get_spans", "Get spans",
		"Everything stored of up to 20 spans by id: trace, parent, rollout, service, kind, status and message, timing, attributes, resource, events."), s.getSpans)
	mcp.AddTool(s.srv, add("check", "Join check",
		"The CLI's `check --json`: is every rollout one trace across processes; broken hops with their cause code, reason and fix; split rollout ids; run-level traffic; tokens."), s.checkTool)
	mcp.AddTool(s.srv, add("explain", "Explain a split",
		"Why one rollout is split (or, without rollout_id, why the capture's hops break): each broken hop with its cause, reason and the span_groups fix."), s.explain)
	mcp.AddTool(s.srv, add("critical_path", "Critical path",
		"The CLI's `path --json`: the chain of spans that owns a rollout's wall time, each segment with service, span and own time, and which process holds it."), s.criticalPath)
	mcp.AddTool(s.srv, add("cohort", "Cohort vs baseline",
		"The CLI's `diff --cohort --json`: rollouts a filter selects against a baseline, feature by feature (span counts, error rates, wall shares), most different first (Cliff's delta)."), s.cohortTool)
	mcp.AddTool(s.srv, add("groups", "Span groups",
		"The CLI's `groups --json`: the Gym variant's span groups, presets and classification rules, as span_groups specs name them."), s.groupsTool)
	s.addWhatIfTools(ro)
}

func (s *Server) status(_ context.Context, _ *mcp.CallToolRequest, _ StatusInput) (*mcp.CallToolResult, report.Status, error) {
	v, done, err := s.begin()
	if err != nil {
		return nil, report.Status{}, err
	}
	defer done()
	chk := s.check(v)
	t := chk.Tally(v.now, s.quiet())
	out := report.NewStatus(v.v, v.snap, t, s.cfg.Live, s.cfg.Setting)
	out.BadLines = s.cfg.BadLines
	if ev := s.joined(v, chk.Structure); ev != nil {
		sum := ev.Summary()
		out.Evidence = &sum
	}
	return nil, out, nil
}

// parseFilter parses a filter argument, its error the CLI's.
func parseFilter(arg, text string) (*filter.Filter, error) {
	f, err := filter.Parse(text)
	if err != nil {
		return nil, fmt.Errorf("%s: %w (syntax: %s)", arg, err, strings.ReplaceAll(filter.Help, "\n", "; "))
	}
	return f, nil
}

func reward(ev *evidence.Joined, id string) *float64 {
	if o := ev.Lookup(id); o != nil && o.HasReward() {
		return &o.Reward
	}
	return nil
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func sortKeys() string { return strings.Join(sortKeyNames, ", ") }

// parseCursor reads a cursor: the offset of the page's first item.
func parseCursor(c string) (int, error) {
	if c == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(strings.TrimPrefix(c, "o:"))
	if err != nil || n < 0 || !strings.HasPrefix(c, "o:") {
		return 0, fmt.Errorf("cursor %q: not a next_cursor this server gave (want o:N)", c)
	}
	return n, nil
}

func cursorAt(n int) string { return "o:" + strconv.Itoa(n) }

// page cuts total items to [from, from+limit) and says so.
func page(total, from, limit int, notes []string) (lo, hi int, p report.Page) {
	lo, hi = min(from, total), min(from+limit, total)
	p = report.Page{Total: total, Notes: notes}
	if hi < total {
		p.Truncated, p.NextCursor = true, cursorAt(hi)
	}
	if p.Notes == nil {
		p.Notes = []string{}
	}
	if from > total {
		p.Notes = append(p.Notes, fmt.Sprintf("cursor %s is past the end (%d items): the store changed, or the list was read to its end", cursorAt(from), total))
	}
	return lo, hi, p
}

func (s *Server) listRollouts(_ context.Context, _ *mcp.CallToolRequest, in ListInput) (*mcp.CallToolResult, report.RolloutList, error) {
	var notes []string
	limit := clamp("limit", in.Limit, DefaultLimit, MaxLimit, &notes)
	cur, from, err := parseListCursor(in.Cursor)
	if err != nil {
		return nil, report.RolloutList{}, err
	}
	if cur != nil && (cur.Sort != in.Sort || cur.Filter != in.Filter) {
		return nil, report.RolloutList{}, fmt.Errorf("cursor: it pages the list of sort %q and filter %q; ask with those, or without cursor from the start", cur.Sort, cur.Filter)
	}
	key, desc := strings.TrimPrefix(in.Sort, "-"), strings.HasPrefix(in.Sort, "-")
	if key == "" {
		key = "start"
	}
	if !slices.Contains(sortKeyNames, key) {
		return nil, report.RolloutList{}, fmt.Errorf("sort %q: want one of %s, - before it for descending", in.Sort, sortKeys())
	}
	v, done, err := s.begin()
	if err != nil {
		return nil, report.RolloutList{}, err
	}
	defer done()
	chk := s.check(v)
	st := chk.Structure
	ev := s.joined(v, st)
	f, err := bindFilter("filter", in.Filter, ev)
	if err != nil {
		return nil, report.RolloutList{}, err
	}
	if key == "reward" && ev == nil {
		return nil, report.RolloutList{}, fmt.Errorf("sort %q: rewards are read from Gym's files: start the server with --evidence PATH", in.Sort)
	}
	capture := f.Rollouts(st.Snap)
	rolls, sorted := capture, key != "start" || desc
	if sorted {
		type row struct {
			r *model.Rollout
			v sortVal
		}
		rows := make([]row, len(capture))
		for i, r := range capture {
			rows[i] = row{r, valueOf(key, r, ev)}
		}
		sort.SliceStable(rows, func(i, j int) bool { return ordered(key, rows[i].v, rows[j].v, desc) < 0 })
		rolls = make([]*model.Rollout, len(rows))
		for i, r := range rows {
			rolls[i] = r.r
		}
	}
	if cur != nil {
		var moved []string
		from, moved = resume(cur, v.snap.Seq, key, desc, sorted, rolls, capture, ev)
		notes = append(notes, moved...)
	}
	lo, hi, p := page(len(rolls), from, limit, notes)
	if p.Truncated {
		last := rolls[hi-1]
		p.NextCursor = listCursor{Seq: v.snap.Seq, Off: hi, Total: len(rolls), ID: last.ID, Key: valueOf(key, last, ev),
			Seen: last.FirstSeen, Sort: in.Sort, Filter: in.Filter}.String()
	}
	toks := report.TokenReport(st)
	out := report.RolloutList{Variant: v.v, Filter: in.Filter, Sort: in.Sort, Rollouts: []report.RolloutRow{}, Page: p}
	if out.Sort == "" {
		out.Sort = "start"
	}
	for _, r := range rolls[lo:hi] {
		row := report.NewRolloutRow(st.Snap, r, chk.ByRollout[r.ID], report.TokensOf(toks.PerRollout[r.ID]))
		if ev != nil {
			row.Evidence = ev.Rollout(r.ID)
		}
		out.Rollouts = append(out.Rollouts, row)
	}
	out.Notes = s.evidenceNotes(out.Notes)
	return nil, out, nil
}

func (s *Server) getRollout(_ context.Context, _ *mcp.CallToolRequest, in GetRolloutInput) (*mcp.CallToolResult, report.RolloutDetail, error) {
	var notes []string
	depth := in.Depth
	switch {
	case depth == 0:
		depth = DefaultDepth
	case depth < 0:
		notes, depth = append(notes, fmt.Sprintf("depth %d is below 0: %d used", in.Depth, DefaultDepth)), DefaultDepth
	case depth > MaxDepth:
		notes, depth = append(notes, fmt.Sprintf("depth %d clamped to %d", in.Depth, MaxDepth)), MaxDepth
	}
	limit := clamp("max_nodes", in.MaxNodes, DefaultNodes, MaxNodes, &notes)
	list := "tree " + in.RolloutID
	cur, from, err := parsePageCursor(in.Cursor, list)
	if err != nil {
		return nil, report.RolloutDetail{}, err
	}
	v, done, err := s.begin()
	if err != nil {
		return nil, report.RolloutDetail{}, err
	}
	defer done()
	chk := s.check(v)
	st := chk.Structure
	r, err := findRollout(st.Snap, in.RolloutID)
	if err != nil {
		return nil, report.RolloutDetail{}, err
	}
	rc := chk.ByRollout[r.ID]
	toks := report.TokenReport(st)
	out := report.RolloutDetail{Variant: v.v, RolloutRow: report.NewRolloutRow(st.Snap, r, rc, report.TokensOf(toks.PerRollout[r.ID])),
		PerService: perService(st.Snap, r), ErrorSpans: []report.SpanRef{}, BrokenHops: []report.Hop{}, Depth: depth}
	if ev := s.joined(v, st); ev != nil {
		out.Evidence = ev.Rollout(r.ID)
	}
	for _, h := range rc.Hops {
		out.BrokenHops = append(out.BrokenHops, report.HopOfBroken(h))
	}
	in2 := st.Snap.Interner()
	for _, fr := range r.Fragments {
		for i := range fr.Spans {
			sp := &fr.Spans[i]
			if sp.Status != model.StatusError || len(out.ErrorSpans) == MaxErrorSpans {
				continue
			}
			ref := report.SpanRef{SpanID: sp.SpanID.String(), Service: st.Snap.ServiceName(sp.Resource), Name: in2.Str(sp.Name)}
			if sp.Extra != nil {
				ref.StatusMessage = sp.Extra.StatusMessage
			}
			out.ErrorSpans = append(out.ErrorSpans, ref)
		}
	}
	if r.Errors > MaxErrorSpans {
		notes = append(notes, fmt.Sprintf("error_spans lists the first %d of %d", MaxErrorSpans, r.Errors))
	}
	nodes := tree(st.Snap, r, depth)
	key := func(i int) string { return nodes[i].SpanID }
	if cur != nil {
		var moved []string
		from, moved = cur.resume(v.snap.Seq, len(nodes), key, "nodes")
		notes = append(notes, moved...)
	}
	lo, hi, p := keyedPage(v.snap.Seq, list, len(nodes), from, limit, key, notes)
	out.Tree, out.Page = nodes[lo:hi], p
	out.Notes = s.evidenceNotes(out.Notes)
	return nil, out, nil
}

func perService(snap *model.Snapshot, r *model.Rollout) []report.ServiceCount {
	by := map[model.ResourceID]*report.ServiceCount{}
	for _, f := range r.Fragments {
		for i := range f.Spans {
			sp := &f.Spans[i]
			c := by[sp.Resource]
			if c == nil {
				c = &report.ServiceCount{Service: snap.ServiceName(sp.Resource)}
				by[sp.Resource] = c
			}
			c.Spans++
			if sp.Status == model.StatusError {
				c.Errors++
			}
		}
	}
	out := make([]report.ServiceCount, 0, len(by))
	for _, c := range by {
		out = append(out, *c)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Spans != out[j].Spans {
			return out[i].Spans > out[j].Spans
		}
		return out[i].Service < out[j].Service
	})
	return out
}

// tree lists r's spans depth-first to depth, children in start order.
func tree(snap *model.Snapshot, r *model.Rollout, depth int) []report.Node {
	in := snap.Interner()
	out := []report.Node{}
	for fi, f := range r.Fragments {
		kids := make([][]int32, len(f.Spans))
		var tops []int32
		for i := range f.Spans {
			if p := f.Spans[i].Parent; p >= 0 && int(p) < len(f.Spans) {
				kids[p] = append(kids[p], int32(i))
			} else {
				tops = append(tops, int32(i))
			}
		}
		byStart := func(xs []int32) {
			sort.SliceStable(xs, func(a, b int) bool { return f.Spans[xs[a]].Start < f.Spans[xs[b]].Start })
		}
		var walk func(i int32, d int)
		walk = func(i int32, d int) {
			sp := &f.Spans[i]
			out = append(out, report.Node{SpanID: sp.SpanID.String(), Depth: d, Fragment: fi, Service: snap.ServiceName(sp.Resource),
				Name: in.Str(sp.Name), Kind: strings.ToLower(sp.Kind.String()), Status: strings.ToLower(sp.Status.String()),
				OffsetMS: report.MS3(sp.Start - r.Start), DurationMS: report.MS3(sp.Duration()), Children: len(kids[i])})
			if d >= depth {
				return
			}
			byStart(kids[i])
			for _, k := range kids[i] {
				walk(k, d+1)
			}
		}
		byStart(tops)
		for _, t := range tops {
			walk(t, 0)
		}
	}
	return out
}

func (s *Server) getSpans(_ context.Context, _ *mcp.CallToolRequest, in SpansInput) (*mcp.CallToolResult, report.Spans, error) {
	out := report.Spans{Spans: []report.SpanDetail{}, NotFound: []string{}, Notes: []string{}}
	if len(in.SpanIDs) == 0 {
		return nil, out, fmt.Errorf("span_ids is empty: give 1 to %d span ids (get_rollout's tree lists them)", MaxSpanIDs)
	}
	ids := in.SpanIDs
	if len(ids) > MaxSpanIDs {
		out.Notes = append(out.Notes, fmt.Sprintf("%d span ids asked, the first %d answered: ask for the rest in another call", len(ids), MaxSpanIDs))
		ids = ids[:MaxSpanIDs]
	}
	want := map[model.SpanID]string{}
	var order []model.SpanID
	for _, id := range ids {
		sid, err := parseSpanID(id)
		if err != nil {
			return nil, out, err
		}
		if _, dup := want[sid]; !dup {
			want[sid] = id
			order = append(order, sid)
		}
	}
	v, done, err := s.begin()
	if err != nil {
		return nil, out, err
	}
	defer done()
	st := v.eng.Structure(v.snap)
	rolls := st.Snap.Rollouts
	if in.RolloutID != "" {
		r, err := findRollout(st.Snap, in.RolloutID)
		if err != nil {
			return nil, out, err
		}
		rolls = []*model.Rollout{r}
	}
	found := map[model.SpanID]report.SpanDetail{}
	look := func(rid string, f *model.Fragment) {
		for i := range f.Spans {
			if _, ok := want[f.Spans[i].SpanID]; ok {
				found[f.Spans[i].SpanID] = spanDetail(st.Snap, rid, f, i)
			}
		}
	}
	for _, r := range rolls {
		for _, f := range r.Fragments {
			look(r.ID, f)
		}
	}
	if in.RolloutID == "" && len(found) < len(want) {
		for _, p := range st.Run {
			look("", p.Frag)
		}
		for _, f := range st.Unattributed {
			look("", f)
		}
		for _, f := range v.snap.Jobs {
			look("", f)
		}
	}
	for _, sid := range order {
		if d, ok := found[sid]; ok {
			out.Spans = append(out.Spans, d)
		} else {
			out.NotFound = append(out.NotFound, want[sid])
		}
	}
	return nil, out, nil
}

func parseSpanID(s string) (model.SpanID, error) {
	var id model.SpanID
	t := strings.ToLower(strings.TrimSpace(s))
	if len(t) != 2*len(id) {
		return id, fmt.Errorf("span id %q: want %d hex digits", s, 2*len(id))
	}
	for i := range id {
		b, err := strconv.ParseUint(t[2*i:2*i+2], 16, 8)
		if err != nil {
			return id, fmt.Errorf("span id %q: want %d hex digits", s, 2*len(id))
		}
		id[i] = byte(b)
	}
	return id, nil
}

func spanDetail(snap *model.Snapshot, rid string, f *model.Fragment, i int) report.SpanDetail {
	in := snap.Interner()
	sp := &f.Spans[i]
	d := report.SpanDetail{SpanID: sp.SpanID.String(), TraceID: f.Trace(i).String(), RolloutID: rid,
		Service: snap.ServiceName(sp.Resource), Name: in.Str(sp.Name), Kind: strings.ToLower(sp.Kind.String()),
		Status: strings.ToLower(sp.Status.String()), Start: report.Time(sp.Start), DurationMS: report.MS3(sp.Duration()),
		Attributes: report.Attributes(in, sp.Attrs), Resource: report.Attributes(in, snap.Resource(sp.Resource).Attrs), Events: []report.Event{}}
	if p := f.ParentID(i); !p.IsZero() {
		d.ParentID = p.String()
	}
	if x := sp.Extra; x != nil {
		d.StatusMessage, d.Links = x.StatusMessage, len(x.Links)
		for _, e := range x.Events {
			d.Events = append(d.Events, report.Event{Name: in.Str(e.Name), OffsetMS: report.MS3(e.Time - sp.Start), Attributes: report.Attributes(in, e.Attrs)})
		}
	}
	return d
}

// setting is the spec a tool judges against: the argument, else the
// setting in force.
func (s *Server) setting(spec string) report.Setting {
	if strings.TrimSpace(spec) != "" {
		return report.Setting{Spec: spec, Source: "spec argument"}
	}
	return s.cfg.Setting
}

func (s *Server) checkTool(_ context.Context, _ *mcp.CallToolRequest, in CheckInput) (*mcp.CallToolResult, report.Check, error) {
	var notes []string
	limit := clamp("limit", in.Limit, DefaultRolloutRows, MaxRolloutRows, &notes)
	v, done, err := s.begin()
	if err != nil {
		return nil, report.Check{}, err
	}
	defer done()
	ev := s.joined(v, v.eng.Structure(v.snap))
	f, err := bindFilter("filter", in.Filter, ev)
	if err != nil {
		return nil, report.Check{}, err
	}
	snap := v.snap
	if !f.Empty() {
		snap = v.eng.Select(snap, f)
	}
	rep := v.eng.Check(snap, v.now, s.grace())
	bad := report.BadLines{Samples: []string{}}
	if s.cfg.BadLines != nil {
		bad = *s.cfg.BadLines
	}
	out := report.NewCheck(v.v, v.reg, rep, s.setting(in.Spec), bad)
	if ev != nil {
		// As check --evidence: the evidence of the rollouts checked.
		ev = ev.Within(rep.Structure)
		sum := ev.Summary()
		out.Evidence, out.RolloutEvidence = &sum, map[string]*evidence.RolloutJSON{}
		for _, r := range rep.Structure.Rollouts {
			if b := ev.Rollout(r.ID); b != nil {
				out.RolloutEvidence[r.ID] = b
			}
		}
	}
	boundCheck(&out, limit, notes)
	return nil, out, nil
}

func (s *Server) explain(_ context.Context, _ *mcp.CallToolRequest, in ExplainInput) (*mcp.CallToolResult, report.Explain, error) {
	v, done, err := s.begin()
	if err != nil {
		return nil, report.Explain{}, err
	}
	defer done()
	chk := s.check(v)
	out := report.Explain{Variant: v.v, Hops: []report.Hop{}, Fixes: []string{}}
	if strings.TrimSpace(in.RolloutID) == "" {
		for _, h := range chk.HopSummary() {
			out.Hops = append(out.Hops, report.HopOf(h))
		}
		out.Status, out.Traces = "split", chk.Traces
		if chk.Intact {
			out.Status = "joined"
		}
		out.Summary = explainSummary(&out, fmt.Sprintf("the capture's %d rollouts", chk.Rollouts), chk.Split)
		return nil, out, nil
	}
	st := chk.Structure
	r, err := findRollout(st.Snap, in.RolloutID)
	if err != nil {
		return nil, report.Explain{}, err
	}
	rc := chk.ByRollout[r.ID]
	out.RolloutID, out.Status, out.Traces, out.Fragments = r.ID, rc.Status.String(), int(r.Traces), len(r.Fragments)
	out.SuspectFragments = len(st.Suspect[r.ID])
	for _, h := range rc.Hops {
		out.Hops = append(out.Hops, report.HopOfBroken(h))
	}
	sort.SliceStable(out.Hops, func(i, j int) bool { return out.Hops[i].Count > out.Hops[j].Count })
	n := 0
	if rc.Status == whatif.Split {
		n = 1
	}
	out.Summary = explainSummary(&out, "rollout "+r.ID, n)
	if rc.Status == whatif.JoinPending {
		out.Summary = "rollout " + r.ID + " is pending: its spans are too fresh to judge (or its root has not arrived); ask again in a few seconds"
	}
	return nil, out, nil
}

// explainSummary says in one sentence what splits what, and sets the
// distinct fixes of out's hops, most spans first.
func explainSummary(out *report.Explain, what string, split int) string {
	seen := map[string]bool{}
	for _, h := range out.Hops {
		if h.Fix != "" && !seen[h.Fix] {
			seen[h.Fix] = true
			out.Fixes = append(out.Fixes, h.Fix)
		}
	}
	switch {
	case split == 0 && len(out.Hops) == 0:
		return what + ": joined, every span in one trace per rollout, no hop broken"
	case split == 0:
		return fmt.Sprintf("%s: joined, but %d hop(s) went wrong without splitting: %s", what, len(out.Hops), out.Hops[0].Reason)
	case len(out.Hops) == 0:
		return fmt.Sprintf("%s: split, by no hop the check can name (a fragment no CLIENT span matches may belong to it)", what)
	}
	s := fmt.Sprintf("%s: split; the main cause (%s, x%d): %s", what, out.Hops[0].Cause, out.Hops[0].Count, out.Hops[0].Reason)
	if len(out.Fixes) > 0 {
		s += "; fix: " + strings.Join(out.Fixes, "; ")
	}
	return s
}

func (s *Server) criticalPath(_ context.Context, _ *mcp.CallToolRequest, in RolloutInput) (*mcp.CallToolResult, report.Path, error) {
	v, done, err := s.begin()
	if err != nil {
		return nil, report.Path{}, err
	}
	defer done()
	snap := v.eng.Structure(v.snap).Snap
	r, err := findRollout(snap, in.RolloutID)
	if err != nil {
		return nil, report.Path{}, err
	}
	out := report.NewPath(v.v, r.ID, critpath.Find(snap, r))
	if ev := s.joined(v, v.eng.Structure(v.snap)); ev != nil {
		out.Evidence = ev.Rollout(r.ID)
	}
	return nil, out, nil
}

func (s *Server) cohortTool(_ context.Context, _ *mcp.CallToolRequest, in CohortInput) (*mcp.CallToolResult, report.Cohort, error) {
	if strings.TrimSpace(in.Cohort) == "" {
		return nil, report.Cohort{}, fmt.Errorf("cohort is empty: give a filter selecting the rollouts to compare, e.g. 'status=error'")
	}
	var notes []string
	top := clamp("top", in.Top, DefaultTopRows, MaxCohortRowCap, &notes)
	v, done, err := s.begin()
	if err != nil {
		return nil, report.Cohort{}, err
	}
	defer done()
	ev := s.joined(v, v.eng.Structure(v.snap))
	cf, err := bindFilter("cohort", in.Cohort, ev)
	if err != nil {
		return nil, report.Cohort{}, err
	}
	var bf *filter.Filter
	if in.Baseline != "" {
		if bf, err = bindFilter("baseline", in.Baseline, ev); err != nil {
			return nil, report.Cohort{}, err
		}
	}
	m := s.memoFor(v, ev)
	key := memoKey("cohort", in)
	if r, ok := m.get(key); ok {
		return nil, r.(report.Cohort), nil
	}
	var lookup func(string) *evidence.Outcome
	if ev != nil {
		lookup = ev.Lookup
	}
	if s.prof == nil || s.profEng != v.eng {
		s.prof, s.profEng = cohort.NewProfiles(v.eng), v.eng
	}
	cmp, err := cohort.CompareKept(v.eng, v.snap, cf, bf, lookup, s.prof)
	if err != nil {
		return nil, report.Cohort{}, err
	}
	out := report.NewCohort(v.v, in.Cohort, in.Baseline, cmp, top)
	cutCohortIDs(&out, MaxCohortIDs, notes)
	m.put(key, out)
	return nil, out, nil
}

// cutCohortIDs cuts each side's id list, of every rollout it holds, to
// most, as check's split_rollouts is cut: the counts stay, and
// list_rollouts pages through the rest. page.total is the rows compared.
func cutCohortIDs(out *report.Cohort, most int, notes []string) {
	cut := false
	for _, side := range []struct {
		name string
		s    *report.CohortSide
	}{{"cohort", &out.Cohort}, {"baseline", &out.Baseline}} {
		if len(side.s.IDs) > most {
			notes = append(notes, fmt.Sprintf("%s.rollout_ids lists %d of %d; list_rollouts with its filter pages through them all", side.name, most, len(side.s.IDs)))
			side.s.IDs, cut = side.s.IDs[:most], true
		}
	}
	if len(notes) > 0 {
		out.Page = &report.Page{Total: len(out.Rows), Truncated: cut, Notes: notes}
	}
}

func (s *Server) groupsTool(_ context.Context, _ *mcp.CallToolRequest, _ noInput) (*mcp.CallToolResult, report.Groups, error) {
	v, done, err := s.begin()
	if err != nil {
		return nil, report.Groups{}, err
	}
	defer done()
	return nil, report.NewGroups(v.v, v.reg), nil
}

// evidenceNotes adds to notes that the outcome files could not be read
// again, when so.
func (s *Server) evidenceNotes(notes []string) []string {
	if s.ev.err != nil {
		notes = append(notes, "Gym's outcome files could not be read again: "+s.ev.err.Error()+"; evidence is as last read")
	}
	return notes
}

// boundCheck cuts a check's per-rollout lists to limit rollouts: the split
// ones listed, and the tokens and evidence of those alone once the
// capture has more rollouts than that.
func boundCheck(out *report.Check, limit int, notes []string) {
	p := report.Page{Total: len(out.SplitRollouts), Notes: notes}
	if len(out.SplitRollouts) > limit {
		p.Truncated = true
		p.Notes = append(p.Notes, fmt.Sprintf("split_rollouts lists %d of %d; list_rollouts with sort -traces pages through them all", limit, len(out.SplitRollouts)))
		out.SplitRollouts = out.SplitRollouts[:limit]
	}
	if len(out.RolloutTokens) > limit || len(out.RolloutEvidence) > limit {
		keep := map[string]bool{}
		for _, id := range out.SplitRollouts {
			keep[id] = true
		}
		for id := range out.RolloutTokens {
			if !keep[id] {
				delete(out.RolloutTokens, id)
			}
		}
		for id := range out.RolloutEvidence {
			if !keep[id] {
				delete(out.RolloutEvidence, id)
			}
		}
		p.Truncated = true
		p.Notes = append(p.Notes, "rollout_tokens and rollout_evidence hold the listed split rollouts' only: list_rollouts gives every rollout's")
	}
	if p.Truncated || len(p.Notes) > 0 {
		out.Page = &p
	}
}
