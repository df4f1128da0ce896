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
	Default   presetKey
	PerRoll   presetKey
	All       presetKey
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

	long map[string]string // help-screen descriptions, by key and short text
}

// DefaultKeyMap returns gymtrace's key bindings. Each has a short
// description, for the one-line footer, and may have a longer one for the
// help screen (explain).
func DefaultKeyMap() *KeyMap {
	k := &KeyMap{long: map[string]string{}}
	b := func(keys []string, shown, short string, long ...string) key.Binding {
		if len(long) > 0 {
			k.long[shown+" "+short] = long[0]
		}
		return key.NewBinding(key.WithKeys(keys...), key.WithHelp(shown, short))
	}
	k.Help = b([]string{"?"}, "?", "help")
	k.Quit = b([]string{"q", "ctrl+c"}, "q", "quit")
	k.Filter = b([]string{"/"}, "/", "filter", "filter rollouts by id, name or terms (below)")
	k.Search = b([]string{"/"}, "/", "search", "search spans: name, attribute, id, or terms")
	k.NextMatch = b([]string{"n"}, "n", "next hit", "next search hit")
	k.PrevMatch = b([]string{"N"}, "N", "prev hit", "previous search hit")
	k.NextError = b([]string{"f"}, "f", "next error", "next failed span")
	k.PrevError = b([]string{"F"}, "F", "prev error", "previous failed span")
	k.Reverse = b([]string{"S"}, "S", "reverse", "reverse the sort order")
	k.NextPanel = b([]string{"tab"}, "tab", "next panel")
	k.PrevPanel = b([]string{"shift+tab"}, "shift+tab", "previous panel")
	k.Up = b([]string{"up", "k"}, "↑/k", "up")
	k.Down = b([]string{"down", "j"}, "↓/j", "down")
	k.Top = b([]string{"g", "home"}, "g", "top")
	k.Bottom = b([]string{"G", "end"}, "G", "bottom")
	k.PageUp = b([]string{"pgup"}, "pgup", "page up")
	k.PageDown = b([]string{"pgdown"}, "pgdn", "page down")
	k.Expand = b([]string{"enter"}, "enter", "open", "open / expand")
	k.Toggle = b([]string{" "}, "space", "toggle", "toggle group / node")
	k.ExpandAll = b([]string{"e"}, "e", "expand all")
	k.Collapse = b([]string{"E"}, "E", "collapse all")
	k.Detail = b([]string{"d"}, "d", "detail", "span detail")
	preset := func(k, name string) presetKey {
		return presetKey{b([]string{k}, k, name, "preset "+name), name}
	}
	k.Default, k.PerRoll, k.All = preset("1", "default"), preset("2", "per_rollout"), preset("3", "all")
	k.Spec = b([]string{":", "i"}, ":/i", "spec", "type a spec")
	k.Copy = b([]string{"y"}, "y", "copy", "copy the previewed spec out")
	k.Preview = b([]string{"p"}, "p", "preview", "the tree under the previewed spec")
	k.Stats = b([]string{"t"}, "t", "stats", "statistics")
	k.Sort = b([]string{"s"}, "s", "sort", "sort: seen start dur spans errors id reward…")
	k.More = b([]string{"+", "="}, "+", "more", "project to more rollouts")
	k.Fewer = b([]string{"-"}, "-", "fewer", "project to fewer rollouts")
	k.Back = b([]string{"esc"}, "esc", "back")
	k.Accept = b([]string{"enter"}, "enter", "apply")

	k.Mark = b([]string{"m"}, "m", "mark", "mark the rollout to compare")
	k.Compare = b([]string{"c"}, "c", "compare", "compare to the marked rollout (none: specs)")
	k.Export = b([]string{"x"}, "x", "export", "export the rollout (OTLP/JSON)")
	k.ExportShaped = b([]string{"X"}, "X", "export previewed", "export it as under the previewed spec")
	k.Worth = b([]string{"w"}, "w", "cost/worth", "cost and worth per group")
	k.Scope = b([]string{"a"}, "a", "scope", "scope: this rollout, the listed ones, all")
	k.Recommend = b([]string{"r"}, "r", "recommend", "preview the spec recommended for a budget")
	k.Cohort = b([]string{"C"}, "C", "cohort", "compare the filtered rollouts with the others")
	k.Path = b([]string{"P"}, "P", "critical path", "critical path on the waterfall")
	return k
}

// presetKey is a key that previews a preset: the binding carries the
// preset's name, so a new one is one line here.
type presetKey struct {
	key.Binding
	preset string
}

// presets lists the preset keys.
func (k *KeyMap) presets() []presetKey { return []presetKey{k.Default, k.PerRoll, k.All} }

// explain is a binding's description for the help screen: the long one
// when it has one.
func (k *KeyMap) explain(b key.Binding) string {
	if l, ok := k.long[b.Help().Key+" "+b.Help().Desc]; ok {
		return l
	}
	return b.Help().Desc
}

// moves reports a movement key: every panel has them and every user knows
// them, so the footer leaves them to the help screen.
func (k *KeyMap) moves(b key.Binding) bool {
	for _, m := range []key.Binding{k.Up, k.Down, k.Top, k.Bottom, k.PageUp, k.PageDown} {
		if b.Help() == m.Help() {
			return true
		}
	}
	return false
}

// Global lists the keys that work in every panel, for the help screen.
func (k *KeyMap) Global() []key.Binding {
	return []key.Binding{k.Quit, k.Back, k.Help, k.NextPanel, k.PrevPanel, k.Filter, k.Sort,
		k.Default.Binding, k.PerRoll.Binding, k.All.Binding, k.Spec, k.Preview, k.Detail, k.Stats, k.More, k.Fewer, k.Copy,
		k.Mark, k.Compare, k.Export, k.ExportShaped, k.Worth, k.Recommend, k.Cohort, k.Path}
}
