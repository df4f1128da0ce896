package tui

import "github.com/charmbracelet/bubbles/key"

// KeyMap holds every binding. It is a value built by DefaultKeyMap, never
// package-global state, and bindings are matched only with key.Matches.
type KeyMap struct {
	Help      key.Binding
	Quit      key.Binding
	Filter    key.Binding
	NextPanel key.Binding
	PrevPanel key.Binding
	Up        key.Binding
	Down      key.Binding
	Top       key.Binding
	Bottom    key.Binding
	PageUp    key.Binding
	PageDown  key.Binding
	Expand    key.Binding
	Toggle    key.Binding
	ExpandAll key.Binding
	Collapse  key.Binding
	Detail    key.Binding
	Default   key.Binding
	PerRoll   key.Binding
	All       key.Binding
	Spec      key.Binding
	Copy      key.Binding
	Preview   key.Binding
	Stats     key.Binding
	Sort      key.Binding
	Reverse   key.Binding
	Search    key.Binding
	NextMatch key.Binding
	PrevMatch key.Binding
	NextError key.Binding
	PrevError key.Binding
	More      key.Binding
	Fewer     key.Binding
	Back      key.Binding
	Accept    key.Binding

	Mark         key.Binding
	Compare      key.Binding
	Export       key.Binding
	ExportShaped key.Binding
	Worth        key.Binding
	Scope        key.Binding
	Recommend    key.Binding
	Cohort       key.Binding
	Path         key.Binding
}

// DefaultKeyMap returns gymtrace's key bindings.
func DefaultKeyMap() *KeyMap {
	b := func(keys []string, k, help string) key.Binding {
		return key.NewBinding(key.WithKeys(keys...), key.WithHelp(k, help))
	}
	return &KeyMap{
		Help:      b([]string{"?"}, "?", "help"),
		Quit:      b([]string{"q", "ctrl+c"}, "q", "quit"),
		Filter:    b([]string{"/"}, "/", "filter rollouts by id, trace/span id, name"),
		Search:    b([]string{"/"}, "/", "search spans (name, attribute, id)"),
		NextMatch: b([]string{"n"}, "n", "next match"),
		PrevMatch: b([]string{"N"}, "N", "previous match"),
		NextError: b([]string{"f"}, "f", "next failed span"),
		PrevError: b([]string{"F"}, "F", "previous failed span"),
		Reverse:   b([]string{"S"}, "S", "reverse the order"),
		NextPanel: b([]string{"tab"}, "tab", "next panel"),
		PrevPanel: b([]string{"shift+tab"}, "shift+tab", "previous panel"),
		Up:        b([]string{"up", "k"}, "↑/k", "up"),
		Down:      b([]string{"down", "j"}, "↓/j", "down"),
		Top:       b([]string{"g", "home"}, "g", "top"),
		Bottom:    b([]string{"G", "end"}, "G", "bottom"),
		PageUp:    b([]string{"pgup"}, "pgup", "page up"),
		PageDown:  b([]string{"pgdown"}, "pgdn", "page down"),
		Expand:    b([]string{"enter"}, "enter", "open / expand"),
		Toggle:    b([]string{" "}, "space", "toggle group / node"),
		ExpandAll: b([]string{"e"}, "e", "expand all"),
		Collapse:  b([]string{"E"}, "E", "collapse all"),
		Detail:    b([]string{"d"}, "d", "span detail"),
		Default:   b([]string{"1"}, "1", "preset default"),
		PerRoll:   b([]string{"2"}, "2", "preset per_rollout"),
		All:       b([]string{"3"}, "3", "preset all"),
		Spec:      b([]string{":", "i"}, ":/i", "type a spec"),
		Copy:      b([]string{"y"}, "y", "copy spec"),
		Preview:   b([]string{"p"}, "p", "preview tree"),
		Stats:     b([]string{"t"}, "t", "statistics"),
		Sort:      b([]string{"s"}, "s", "sort: seen, start, duration, spans, errors, id"),
		More:      b([]string{"+", "="}, "+", "project to more rollouts"),
		Fewer:     b([]string{"-"}, "-", "project to fewer rollouts"),
		Back:      b([]string{"esc"}, "esc", "back"),
		Accept:    b([]string{"enter"}, "enter", "apply"),

		Mark:         b([]string{"m"}, "m", "mark the rollout to compare"),
		Compare:      b([]string{"c"}, "c", "compare with the marked rollout (none: current vs preview)"),
		Export:       b([]string{"x"}, "x", "export the rollout (OTLP/JSON)"),
		ExportShaped: b([]string{"X"}, "X", "export it as under the previewed spec"),
		Worth:        b([]string{"w"}, "w", "cost and worth per group"),
		Scope:        b([]string{"a"}, "a", "statistics over: this rollout, the listed ones, all"),
		Recommend:    b([]string{"r"}, "r", "preview the spec recommended for --budget"),
		Cohort:       b([]string{"C"}, "C", "compare the filtered rollouts with the others"),
		Path:         b([]string{"P"}, "P", "critical path on the waterfall"),
	}
}

// Global lists the keys that work in every panel, for the help screen.
func (k *KeyMap) Global() []key.Binding {
	return []key.Binding{k.Quit, k.Back, k.Help, k.NextPanel, k.PrevPanel, k.Filter, k.Sort,
		k.Default, k.PerRoll, k.All, k.Spec, k.Preview, k.Detail, k.Stats, k.More, k.Fewer, k.Copy,
		k.Mark, k.Compare, k.Export, k.ExportShaped, k.Worth, k.Recommend, k.Cohort, k.Path}
}
