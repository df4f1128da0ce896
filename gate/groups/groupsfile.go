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

// loadNode is Load of a parsed groups file: a loader reads its sections in
// order, groups before the presets that name them and the rules that
// select them, and collects every problem.
func (r *Registry) loadNode(filename string, root *yaml.Node) (*Registry, error) {
	l := newLoader(filename, r.clone())
	if root.Kind != yaml.MappingNode {
		l.bad(root, "a groups file is a mapping with groups, presets and rules")
		return nil, l.errs
	}
	section := l.sections(root)
	if seq := section["groups"]; seq != nil {
		for _, item := range seq.Content {
			l.group(item)
		}
	}
	if seq := section["presets"]; seq != nil {
		for _, item := range seq.Content {
			l.preset(item)
		}
	}
	if seq := section["rules"]; seq != nil {
		for _, item := range seq.Content {
			l.rule(item)
		}
	}
	return l.finish(r)
}

// loader is one groups file being loaded into out, a copy of the registry
// it extends.
type loader struct {
	filename string
	out      *Registry
	errs     ErrorList
	// taken holds every group and preset name, the registry's and the
	// file's so far: a name may be defined once.
	taken map[string]bool
	// userRules are the file's rules, its groups' span patterns first, in
	// the order the file lists them.
	userRules []Rule
}

func newLoader(filename string, out *Registry) *loader {
	l := &loader{filename: filename, out: out, taken: map[string]bool{}}
	for _, g := range out.order {
		l.taken[out.groups[g].Name] = true
	}
	for _, p := range out.presets {
		l.taken[p.Name] = true
	}
	return l
}

// bad records a problem at n.
func (l *loader) bad(n *yaml.Node, format string, args ...any) {
	l.errs = append(l.errs, Problem{File: l.filename, Line: n.Line, Column: n.Column, Msg: fmt.Sprintf(format, args...)})
}

// sections returns the root's groups, presets and rules lists by key; a
// null section is absent, any other key a problem.
func (l *loader) sections(root *yaml.Node) map[string]*yaml.Node {
	section := map[string]*yaml.Node{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		switch k.Value {
		case "groups", "presets", "rules":
			if v.Kind != yaml.SequenceNode {
				if v.Tag != "!!null" {
					l.bad(v, "%s must be a list", k.Value)
				}
				continue
			}
			section[k.Value] = v
		default:
			l.bad(k, "unknown key %q (want groups, presets or rules)", k.Value)
		}
	}
	return section
}

// group adds one entry of the groups list: the group, and a rule for each
// of its span patterns.
func (l *loader) group(item *yaml.Node) {
	out := l.out
	f := fields(item, l.bad, "name", "description", "spans", "kind", "metric", "matched")
	if f == nil {
		return
	}
	name := f.str("name", l.bad, true)
	if name == "" {
		return
	}
	desc := f.str("description", l.bad, true)
	kind := f.kind(l.bad)
	metric := f.str("metric", l.bad, false)
	matched := f.str("matched", l.bad, false)
	if metric != "" && strings.ContainsAny(metric, " \t\r\n") {
		l.bad(f.at("metric"), "metric name %q must not contain spaces", metric)
		metric = ""
	}
	if !snakeCase.MatchString(name) {
		l.bad(f.at("name"), "group name %q must be snake_case (lower-case letters, digits, single underscores)", name)
		return
	}
	if l.taken[name] {
		l.bad(f.at("name"), "group %q is already defined", name)
		return
	}
	// A built-in name takes its constant's bit, so gate.Startup
	// means startup in every registry that knows it.
	g, builtin := builtinGroup(name)
	if !builtin {
		if len(out.groups) >= MaxGroups {
			l.bad(f.at("name"), "too many groups: at most %d, built-in ones included", MaxGroups)
			return
		}
		g = Group(len(out.groups))
		out.groups = append(out.groups, GroupInfo{})
	}
	l.taken[name] = true
	pats := f.list("spans", l.bad)
	for _, p := range pats {
		if rule, ok := patternRule(p.Value); ok {
			rule.Group, rule.Kind = g, kind
			l.userRules = append(l.userRules, rule)
		} else {
			l.bad(p, "span pattern %q: use a name, name*, or *name", p.Value)
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

// preset adds one entry of the presets list, its groups in the registry's
// order.
func (l *loader) preset(item *yaml.Node) {
	out := l.out
	f := fields(item, l.bad, "name", "description", "groups")
	if f == nil {
		return
	}
	name := f.str("name", l.bad, true)
	desc := f.str("description", l.bad, true)
	if name == "" {
		return
	}
	if !snakeCase.MatchString(name) {
		l.bad(f.at("name"), "preset name %q must be snake_case", name)
		return
	}
	if l.taken[name] {
		l.bad(f.at("name"), "preset %q clashes with a group or preset of that name", name)
		return
	}
	var set Set
	entries := f.list("groups", l.bad)
	for _, gn := range entries {
		s, err := out.Parse(gn.Value)
		if err != nil {
			l.bad(gn, "preset %q: unknown group or preset %q", name, gn.Value)
			continue
		}
		set |= s
	}
	switch {
	case f.at("groups") == nil:
		l.bad(item, "preset %q has no groups", name)
	case len(entries) == 0:
		l.bad(f.at("groups"), "preset %q has no groups", name)
	}
	l.taken[name] = true
	var gs []Group
	for _, g := range out.order {
		if set.Has(g) {
			gs = append(gs, g)
		}
	}
	out.presets = append(out.presets, Preset{Name: name, Description: desc, Groups: gs})
}

// rule adds one entry of the rules list: a name pattern, a kind or both,
// for a group the registry or the file defines.
func (l *loader) rule(item *yaml.Node) {
	f := fields(item, l.bad, "group", "name", "kind")
	if f == nil {
		return
	}
	gname := f.str("group", l.bad, true)
	pat := f.str("name", l.bad, false)
	kind := f.kind(l.bad)
	g, ok := l.out.Lookup(gname)
	if gname != "" && !ok {
		l.bad(f.at("group"), "unknown group %q; valid groups: %s", gname, strings.Join(l.out.groupNames(), ", "))
		return
	}
	if pat == "" && f.at("kind") == nil {
		l.bad(item, "a rule needs a name pattern or a kind")
		return
	}
	rule := Rule{Group: g, Kind: kind}
	if pat != "" {
		pr, ok := patternRule(pat)
		if !ok {
			l.bad(f.at("name"), "span pattern %q: use a name, name*, or *name", pat)
			return
		}
		rule.Name, rule.Prefix, rule.Suffix = pr.Name, pr.Prefix, pr.Suffix
	}
	l.userRules = append(l.userRules, rule)
}

// finish returns the extended registry, the file's rules placed among r's,
// or every problem sorted by position.
func (l *loader) finish(r *Registry) (*Registry, error) {
	if errs := l.errs; len(errs) > 0 {
		sort.SliceStable(errs, func(i, j int) bool {
			if errs[i].Line != errs[j].Line {
				return errs[i].Line < errs[j].Line
			}
			return errs[i].Column < errs[j].Column
		})
		return nil, errs
	}
	out := l.out
	// Attribute rules stay first: an emitter's explicit word beats any name.
	n := 0
	for n < len(r.rules) && r.rules[n].Attr != "" {
		n++
	}
	out.rules = append(append(append([]Rule(nil), r.rules[:n]...), l.userRules...), r.rules[n:]...)
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
