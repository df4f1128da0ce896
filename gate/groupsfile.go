package gate

import (
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// A groups file adds span groups, presets and classification rules to the
// registry, for emitters newer than gymtrace (a Gym with a startup group) or
// around Gym (NeMo-RL's training groups):
//
//	groups:
//	  - name: startup
//	    description: server start-up phases
//	    spans: ["gym.startup*"]        # name patterns; a trailing or leading * globs
//	    kind: INTERNAL                 # optional, for every pattern
//	    metric: gym.startup.duration_ms # optional: a metric the group gates
//	presets:
//	  - name: debug_startup
//	    description: default plus start-up
//	    groups: [default, startup]     # groups or presets
//	rules:                             # more rules for any group
//	  - group: server
//	    name: "GET /health"
//	    kind: SERVER
//
// File rules are tried after the explicit span-group attribute and before
// the built-in rules, so a file can reclassify a built-in name.

// Problem is one error in a groups file, with its position.
type Problem struct {
	File         string
	Line, Column int
	Msg          string
}

// Error renders the problem as file:line:column: message.
func (p Problem) Error() string {
	return fmt.Sprintf("%s:%d:%d: %s", p.File, p.Line, p.Column, p.Msg)
}

// ErrorList is every problem found in a groups file, sorted by position.
type ErrorList []Problem

// Error renders every problem, one per line.
func (l ErrorList) Error() string {
	switch len(l) {
	case 0:
		return "no errors"
	case 1:
		return l[0].Error()
	}
	var b strings.Builder
	for i, p := range l {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(p.Error())
	}
	return b.String()
}

var snakeCase = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)

var kinds = map[string]bool{"SERVER": true, "CLIENT": true, "INTERNAL": true, "PRODUCER": true, "CONSUMER": true}

// LoadFile extends r with the groups file at path; see Load.
func (r *Registry) LoadFile(path string) (*Registry, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read groups file: %w", err)
	}
	return r.Load(path, src)
}

// Load returns a copy of r extended with the groups, presets and rules of a
// groups file (filename is used in messages). Every problem is reported, with
// file:line, as an ErrorList; r itself is never changed.
func (r *Registry) Load(filename string, src []byte) (*Registry, error) {
	out := &Registry{
		groups:  append([]GroupInfo(nil), r.groups...),
		presets: append([]Preset(nil), r.presets...),
	}
	var errs ErrorList
	bad := func(n *yaml.Node, format string, args ...any) {
		errs = append(errs, Problem{File: filename, Line: n.Line, Column: n.Column, Msg: fmt.Sprintf(format, args...)})
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		line := 1
		msg := err.Error()
		// yaml.v3 writes "yaml: line N: msg".
		if _, err := fmt.Sscanf(msg, "yaml: line %d:", &line); err == nil {
			msg = msg[strings.Index(msg, ":")+1:]
			msg = strings.TrimSpace(msg[strings.Index(msg, ":")+1:])
		}
		return nil, ErrorList{{File: filename, Line: line, Column: 1, Msg: "invalid YAML: " + msg}}
	}
	if len(doc.Content) == 0 {
		return out, nil // an empty file adds nothing
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		bad(root, "a groups file is a mapping with groups, presets and rules")
		return nil, errs
	}
	var userRules []Rule
	taken := map[string]bool{}
	for _, g := range out.groups {
		taken[g.Name] = true
	}
	for _, p := range out.presets {
		taken[p.Name] = true
	}
	section := map[string]*yaml.Node{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		switch k.Value {
		case "groups", "presets", "rules":
			if v.Kind != yaml.SequenceNode {
				if v.Tag != "!!null" {
					bad(v, "%s must be a list", k.Value)
				}
				continue
			}
			section[k.Value] = v
		default:
			bad(k, "unknown key %q (want groups, presets or rules)", k.Value)
		}
	}
	if seq := section["groups"]; seq != nil {
		for _, item := range seq.Content {
			f := fields(item, bad, "name", "description", "spans", "kind", "metric")
			if f == nil {
				continue
			}
			name := f.str("name", bad, true)
			if name == "" {
				continue
			}
			desc := f.str("description", bad, true)
			kind := f.kind(bad)
			metric := f.str("metric", bad, false)
			if metric != "" && strings.ContainsAny(metric, " \t\r\n") {
				bad(f.at("metric"), "metric name %q must not contain spaces", metric)
				metric = ""
			}
			if !snakeCase.MatchString(name) {
				bad(f.at("name"), "group name %q must be snake_case (lower-case letters, digits, single underscores)", name)
				continue
			}
			if taken[name] {
				bad(f.at("name"), "group %q is already defined", name)
				continue
			}
			if len(out.groups) >= MaxGroups {
				bad(f.at("name"), "too many groups: at most %d, built-in ones included", MaxGroups)
				continue
			}
			taken[name] = true
			g := Group(len(out.groups))
			pats := f.list("spans", bad)
			for _, p := range pats {
				if rule, ok := patternRule(p.Value); ok {
					rule.Group, rule.Kind = g, kind
					userRules = append(userRules, rule)
				} else {
					bad(p, "span pattern %q: use a name, name*, or *name", p.Value)
				}
			}
			spans := make([]string, len(pats))
			for i, p := range pats {
				spans[i] = p.Value
			}
			out.groups = append(out.groups, GroupInfo{Name: name, Description: desc, Spans: strings.Join(spans, ", "), EmitsSpans: len(pats) > 0, Metric: metric})
		}
	}
	if seq := section["presets"]; seq != nil {
		for _, item := range seq.Content {
			f := fields(item, bad, "name", "description", "groups")
			if f == nil {
				continue
			}
			name := f.str("name", bad, true)
			desc := f.str("description", bad, true)
			if name == "" {
				continue
			}
			if !snakeCase.MatchString(name) {
				bad(f.at("name"), "preset name %q must be snake_case", name)
				continue
			}
			if taken[name] {
				bad(f.at("name"), "preset %q clashes with a group or preset of that name", name)
				continue
			}
			var set Set
			entries := f.list("groups", bad)
			for _, gn := range entries {
				s, err := out.Parse(gn.Value)
				if err != nil {
					bad(gn, "preset %q: unknown group or preset %q", name, gn.Value)
					continue
				}
				set |= s
			}
			switch {
			case f.at("groups") == nil:
				bad(item, "preset %q has no groups", name)
			case len(entries) == 0:
				bad(f.at("groups"), "preset %q has no groups", name)
			}
			taken[name] = true
			var gs []Group
			for i := range out.groups {
				if set.Has(Group(i)) {
					gs = append(gs, Group(i))
				}
			}
			out.presets = append(out.presets, Preset{Name: name, Description: desc, Groups: gs})
		}
	}
	if seq := section["rules"]; seq != nil {
		for _, item := range seq.Content {
			f := fields(item, bad, "group", "name", "kind")
			if f == nil {
				continue
			}
			gname := f.str("group", bad, true)
			pat := f.str("name", bad, false)
			kind := f.kind(bad)
			g, ok := out.Lookup(gname)
			if gname != "" && !ok {
				bad(f.at("group"), "unknown group %q; valid groups: %s", gname, strings.Join(out.groupNames(), ", "))
				continue
			}
			if pat == "" && f.at("kind") == nil {
				bad(item, "a rule needs a name pattern or a kind")
				continue
			}
			rule := Rule{Group: g, Kind: kind}
			if pat != "" {
				pr, ok := patternRule(pat)
				if !ok {
					bad(f.at("name"), "span pattern %q: use a name, name*, or *name", pat)
					continue
				}
				rule.Name, rule.Prefix, rule.Suffix = pr.Name, pr.Prefix, pr.Suffix
			}
			userRules = append(userRules, rule)
		}
	}
	// A group that rules select emits spans, whether or not it listed any.
	for _, rule := range userRules {
		out.groups[rule.Group].EmitsSpans = true
	}
	if len(errs) > 0 {
		sort.SliceStable(errs, func(i, j int) bool {
			if errs[i].Line != errs[j].Line {
				return errs[i].Line < errs[j].Line
			}
			return errs[i].Column < errs[j].Column
		})
		return nil, errs
	}
	// Attribute rules stay first: an emitter's explicit word beats any name.
	n := 0
	for n < len(r.rules) && r.rules[n].Attr != "" {
		n++
	}
	out.rules = append(append(append([]Rule(nil), r.rules[:n]...), userRules...), r.rules[n:]...)
	return out, nil
}

// patternRule turns "name", "prefix*" or "*suffix" into a rule.
func patternRule(p string) (Rule, bool) {
	switch {
	case p == "" || p == "*" || strings.Count(p, "*") > 1:
		return Rule{}, false
	case strings.HasSuffix(p, "*"):
		return Rule{Prefix: strings.TrimSuffix(p, "*")}, true
	case strings.HasPrefix(p, "*"):
		return Rule{Suffix: strings.TrimPrefix(p, "*")}, true
	case strings.Contains(p, "*"):
		return Rule{}, false
	}
	return Rule{Name: p}, true
}

// mapping is one YAML mapping's values by key, for error positions.
type mapping struct {
	node *yaml.Node
	vals map[string]*yaml.Node
}

func fields(n *yaml.Node, bad func(*yaml.Node, string, ...any), allowed ...string) *mapping {
	if n.Kind != yaml.MappingNode {
		bad(n, "want a mapping with %s", strings.Join(allowed, ", "))
		return nil
	}
	m := &mapping{node: n, vals: map[string]*yaml.Node{}}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		ok := false
		for _, a := range allowed {
			ok = ok || a == k.Value
		}
		if !ok {
			bad(k, "unknown key %q (want %s)", k.Value, strings.Join(allowed, ", "))
			continue
		}
		if _, dup := m.vals[k.Value]; dup {
			bad(k, "duplicate key %q", k.Value)
			continue
		}
		m.vals[k.Value] = n.Content[i+1]
	}
	return m
}

func (m *mapping) at(key string) *yaml.Node { return m.vals[key] }

func (m *mapping) str(key string, bad func(*yaml.Node, string, ...any), required bool) string {
	v := m.vals[key]
	if v == nil {
		if required {
			bad(m.node, "missing %s", key)
		}
		return ""
	}
	if v.Kind != yaml.ScalarNode || v.Value == "" {
		bad(v, "%s must be a non-empty string", key)
		return ""
	}
	return v.Value
}

func (m *mapping) list(key string, bad func(*yaml.Node, string, ...any)) []*yaml.Node {
	v := m.vals[key]
	switch {
	case v == nil:
		return nil
	case v.Kind == yaml.ScalarNode && v.Value != "":
		return []*yaml.Node{v}
	case v.Kind == yaml.SequenceNode:
		var out []*yaml.Node
		for _, x := range v.Content {
			if x.Kind != yaml.ScalarNode || x.Value == "" {
				bad(x, "%s entries must be non-empty strings", key)
				continue
			}
			out = append(out, x)
		}
		return out
	}
	bad(v, "%s must be a string or a list of strings", key)
	return nil
}

func (m *mapping) kind(bad func(*yaml.Node, string, ...any)) string {
	v := m.vals["kind"]
	if v == nil {
		return ""
	}
	k := strings.ToUpper(strings.TrimPrefix(v.Value, "SpanKind."))
	if !kinds[k] {
		bad(v, "kind %q: want SERVER, CLIENT, INTERNAL, PRODUCER or CONSUMER", v.Value)
		return ""
	}
	return k
}
