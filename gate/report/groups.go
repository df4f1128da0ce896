package report

import "github.com/nemo-gym/gymtrace/gate/groups"

// Groups is the result of `groups --json` and the groups tool: the
// variant's groups, presets and classification rules.
type Groups struct {
	Variant
	Groups  []GroupInfo  `json:"groups"`
	Presets []PresetInfo `json:"presets"`
	Rules   []Rule       `json:"rules"`
}

// GroupInfo is one span group.
type GroupInfo struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Spans       string `json:"spans"`
	EmitsSpans  bool   `json:"emits_spans"`
	Metric      string `json:"metric,omitempty"` // the metric a span-less group gates
}

// PresetInfo is one preset and the groups it stands for, sorted.
type PresetInfo struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Groups      []string `json:"groups"`
}

// Rule is one classification rule, in match order from 1.
type Rule struct {
	Order int    `json:"order"`
	Group string `json:"group"`
	Match string `json:"match"`
}

// NewGroups lists reg's groups, presets and rules.
func NewGroups(v Variant, reg *groups.Registry) Groups {
	out := Groups{Variant: v, Groups: []GroupInfo{}, Presets: []PresetInfo{}, Rules: []Rule{}}
	for _, g := range reg.Groups() {
		out.Groups = append(out.Groups, GroupInfo{g.Name, g.Description, g.Spans, g.EmitsSpans, g.Metric})
	}
	for _, p := range reg.Presets() {
		s, _ := reg.PresetSet(p.Name)
		out.Presets = append(out.Presets, PresetInfo{p.Name, p.Description, NonNil(reg.Names(s))})
	}
	for i, r := range reg.Rules() {
		g := reg.Name(r.Group)
		if r.Attr != "" {
			g = "(named by the attribute)"
		}
		out.Rules = append(out.Rules, Rule{i + 1, g, r.String()})
	}
	return out
}
