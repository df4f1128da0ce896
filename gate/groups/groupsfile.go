package groups

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
	root, err := parseYAML(filename, src)
	if err != nil {
		return nil, err
	}
	if root == nil {
		return r.clone(), nil // an empty file adds nothing
	}
	return r.loadNode(filename, root)
}

// parseYAML returns the document's root node, nil for an empty document.
func parseYAML(filename string, src []byte) (*yaml.Node, error) {
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
		return nil, nil
	}
	return doc.Content[0], nil
}

// clone returns a copy of r whose slices can be appended to.
func (r *Registry) clone() *Registry {
	out := *r
	out.groups = append([]GroupInfo(nil), r.groups...)
	out.order = append([]Group(nil), r.order...)
	out.presets = append([]Preset(nil), r.presets...)
	out.rules = append([]Rule(nil), r.rules...)
	return &out
}

// loadNode is Load of a parsed groups file.
func (r *Registry) loadNode(filename string, root *yaml.Node) (*Registry, error) {
	out := r.clone()
	var errs ErrorList
	bad := func(n *yaml.Node, format string, args ...any) {
		errs = append(errs, Problem{File: filename, Line: n.Line, Column: n.Column, Msg: fmt.Sprintf(format, args...)})
	}
	if root.Kind != yaml.MappingNode {
		bad(root, "a groups file is a mapping with groups, presets and rules")
		return nil, errs
	}
	var userRules []Rule
	taken := map[string]bool{}
	for _, g := range out.order {
		taken[out.groups[g].Name] = true
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
			f := fields(item, bad, "name", "description", "spans", "kind", "metric", "matched")
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
			matched := f.str("matched", bad, false)
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
			// A built-in name takes its constant's bit, so gate.Startup
			// means startup in every registry that knows it.
			g, builtin := builtinGroup(name)
			if !builtin {
				if len(out.groups) >= MaxGroups {
					bad(f.at("name"), "too many groups: at most %d, built-in ones included", MaxGroups)
					continue
				}
				g = Group(len(out.groups))
				out.groups = append(out.groups, GroupInfo{})
			}
			taken[name] = true
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
			shown := strings.Join(spans, ", ")
			if matched != "" {
				shown = matched
			}
			out.groups[g] = GroupInfo{Group: g, Name: name, Description: desc, Spans: shown, EmitsSpans: len(pats) > 0, Metric: metric}
			out.known = out.known.With(g)
			out.order = append(out.order, g)
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
			for _, g := range out.order {
				if set.Has(g) {
					gs = append(gs, g)
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
	out.settle()
	return out, nil
}

// settle drops the rules of groups the registry does not know (built-in
// rules of a group a variant lacks) and marks every group a rule selects as
// emitting spans, whether or not it listed any.
func (r *Registry) settle() {
	rules := r.rules[:0]
	for _, rule := range r.rules {
		if rule.Attr == "" && !r.Known(rule.Group) {
			continue
		}
		rules = append(rules, rule)
		if rule.Attr == "" {
			r.groups[rule.Group].EmitsSpans = true
		}
	}
	r.rules = rules
}

// builtinGroup returns the built-in group of that name.
func builtinGroup(name string) (Group, bool) {
	for i, n := range builtinNames {
		if n == name {
			return Group(i), true
		}
	}
	return 0, false
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
