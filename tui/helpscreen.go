package tui

import (
	"sort"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/nemo-gym/gymtrace/gate/filter"
	"github.com/nemo-gym/gymtrace/model"
)

// The help screen: the focused panel's keys first, then every other
// panel's, the legend and the filter syntax.

// openHelp renders the help screen for the focused panel and shows it.
func (m *Model) openHelp() {
	m.showHelp = true
	m.helpView.setLines(m.helpLines())
	m.helpView.vp.GotoTop()
}

// helpLines is the help screen: how to quit and close first, then the focused
// panel's keys, the global keys, every other panel's keys and the legend.
func (m *Model) helpLines() []string {
	k := m.keys
	seen := map[string]bool{}
	type section struct {
		title string
		keys  []key.Binding
	}
	var secs []section
	add := func(title string, bs []key.Binding) {
		var out []key.Binding
		for _, b := range bs {
			id := b.Help().Key + " " + b.Help().Desc
			if !seen[id] {
				seen[id] = true
				out = append(out, b)
			}
		}
		if len(out) > 0 {
			secs = append(secs, section{title, out})
		}
	}
	add("quit and close", []key.Binding{k.Quit, k.Back, k.Help})
	front := m.front(m.focus)
	add(front.name()+" (focused)", front.help())
	add("everywhere", k.Global())
	for _, p := range m.panels {
		if p != front {
			add(p.name(), p.help())
		}
	}
	const keyW, colW = 9, 58
	var lines []string
	for _, sec := range secs {
		lines = append(lines, m.st.Panel.Title.Render(sec.title))
		for _, b := range sec.keys {
			lines = append(lines, "  "+m.st.App.Title.Render(fit(b.Help().Key, keyW))+" "+k.explain(b))
		}
	}
	lines = append(lines, m.st.Panel.Title.Render("legend"))
	if m.snap != nil {
		for _, sv := range m.services() {
			bar := strings.Repeat(string(m.st.Fill(uint32(sv.id))), 3)
			lines = append(lines, "  "+fit(m.st.Service(uint32(sv.id)).Render(bar), keyW)+" "+sv.name)
		}
	}
	for _, g := range [][2]string{
		{glyphError, "failed span (error status); rollouts: error spans"},
		{glyphSplit, "join broken: split rollout, broken hop, new trace"},
		{glyphJoined, "joined: the rollout is one trace tree"},
		{glyphPending, "pending: spans may still arrive"},
		{glyphTruncated, "truncated: force-closed at shutdown"},
		{glyphFolded + " +N", "collapsed node and the spans it hides"},
		{string(glyphEvent), "span event (an exception, say) on its bar"},
		{string(glyphPath), "the span holds the critical path there (P)"},
		{glyphMatch, "search hit"},
		{glyphLeak, "context leak, no join break; rollouts: has one"},
		{"·", "time-axis tick"},
		{"›", "cursor"},
		{glyphMarked, "rollout marked for comparison (m)"},
		{"name*", "group changed from the current spec"},
		{"trace ids", "header: distinct trace ids captured"},
		{"traces", "span groups: traces each spec would send"},
	} {
		lines = append(lines, "  "+fit(g[0], keyW)+" "+g[1])
	}
	// As many columns as fit, filled top to bottom.
	cols := clamp(m.width/colW, 1, 4)
	if cols == 1 {
		for i, l := range lines {
			lines[i] = clip(l, max(m.width, 1))
		}
		return append(lines, filterHelp(m.st, m.width)...)
	}
	h := (len(lines) + cols - 1) / cols
	out := make([]string, h)
	for i, l := range lines {
		if i/h < cols-1 {
			l = fit(l, colW)
		}
		out[i%h] += l
	}
	for i := range out {
		out[i] = clip(out[i], m.width)
	}
	return append(out, filterHelp(m.st, m.width)...)
}

// filterHelp is the rollout filter's syntax, full width.
func filterHelp(st *Styles, w int) []string {
	lines := []string{st.Panel.Title.Render("rollout filter (/)")}
	for _, l := range strings.Split(filter.Help, "\n") {
		lines = append(lines, clip("  "+l, w))
	}
	return lines
}

// service is a resource and its short service name.
type service struct {
	id   model.ResourceID
	name string
}

// services lists the capture's services in resource order, for the legend.
func (m *Model) services() []service {
	seen := map[model.ResourceID]bool{}
	var out []service
	for _, r := range m.snap.Rollouts {
		for _, f := range r.Fragments {
			for i := range f.Spans {
				if id := f.Spans[i].Resource; !seen[id] {
					seen[id] = true
					out = append(out, service{id, shortService(m.snap.ServiceName(id))})
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}
