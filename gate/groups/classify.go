package groups

import (
	"math"
	"strings"

	"github.com/nemo-gym/gymtrace/model"
)

// SpanGroupAttr is the explicit span-group attribute: an emitter that names a
// span's group on the span itself is believed before any name rule.
const SpanGroupAttr = "nemo.gym.span_group"

// Rule classifies spans into a group. First match wins, in registry order of
// rules. Fields left empty match anything.
type Rule struct {
	Group Group
	// Name matches the span name exactly; Prefix matches its start.
	Name   string
	Prefix string
	// Suffix matches the end of the span name.
	Suffix string
	// Kind matches the span kind ("SERVER", "CLIENT", "INTERNAL"); empty = any.
	Kind string
	// ParentKind, with Suffix, describes instrumentation children: the span's
	// name must be its parent's name plus Suffix and the parent of this kind.
	// When the parent is absent the suffix alone decides, because children end
	// before their parent and routinely arrive first.
	ParentKind string
	// Method requires the rest of the name after Prefix to be an HTTP method
	// (upper-case letters only), as in "HTTP POST".
	Method bool
	// Attr names an attribute whose value is the group's name: the rule
	// matches when the value names a known group, whatever Group says.
	Attr string
}

// String renders the rule the way `gymtrace groups` lists it.
func (r Rule) String() string {
	var parts []string
	if r.Attr != "" {
		parts = append(parts, "attribute "+r.Attr+" names the group")
	}
	switch {
	case r.Name != "":
		parts = append(parts, "name = "+r.Name)
	case r.Prefix != "" && r.Method:
		parts = append(parts, "name = "+r.Prefix+"<METHOD>")
	case r.Prefix != "" && r.Suffix != "":
		parts = append(parts, "name = "+r.Prefix+"*"+r.Suffix)
	case r.Prefix != "":
		parts = append(parts, "name = "+r.Prefix+"*")
	case r.Suffix != "" && r.ParentKind != "":
		parts = append(parts, "name = <parent name>"+r.Suffix+", parent kind "+r.ParentKind)
	case r.Suffix != "":
		parts = append(parts, "name = *"+r.Suffix)
	}
	if r.Kind != "" {
		parts = append(parts, "kind "+r.Kind)
	}
	return strings.Join(parts, ", ")
}

// defaultRules are the classification rules every Gym variant shares, in
// match order: the instrumentation's structural spans. The gym.* names of
// each variant come from its file (gate/groups/variants) and are tried before
// these, so that a future gym.* SERVER span would still land in its
// semantic group.
func defaultRules() []Rule {
	return []Rule{
		{Attr: SpanGroupAttr},
		{Group: Server, Kind: "SERVER"},
		{Group: Server, Kind: "INTERNAL", Suffix: " http receive", ParentKind: "SERVER"},
		{Group: Server, Kind: "INTERNAL", Suffix: " http send", ParentKind: "SERVER"},
		{Group: HTTPClient, Kind: "CLIENT", Prefix: "HTTP ", Method: true},
	}
}

// Rules returns the classification rules in match order.
func (r *Registry) Rules() []Rule { return r.rules }

// Classify returns the group of sp, or Unclassified. parent is sp's captured
// parent, nil when it is absent (a root, or not arrived yet). in resolves
// sp's interned name and attributes.
func (r *Registry) Classify(in *model.Interner, sp *model.Span, parent *model.Span) Group {
	name := in.Str(sp.Name)
	parentName := ""
	parentKind := model.KindUnspecified
	if parent != nil {
		parentName = in.Str(parent.Name)
		parentKind = parent.Kind
	}
	for i := range r.rules {
		rule := &r.rules[i]
		if rule.Attr != "" {
			if v, ok := sp.Attrs.Get(in, rule.Attr); ok {
				if g, ok := r.Lookup(strings.ToLower(strings.TrimSpace(v.String()))); ok {
					return g
				}
			}
			continue
		}
		if rule.match(name, sp.Kind, parent != nil, parentName, parentKind) {
			return rule.Group
		}
	}
	return fallbackGroup(name, sp.Kind)
}

// fallbackGroup classifies what no rule names: a bare "<METHOD>" CLIENT span
// is the aiohttp instrumentation's (ungated); an INTERNAL span named like a
// request is a request span that a context carry-over made INTERNAL, still
// the server group's.
func fallbackGroup(name string, kind model.Kind) Group {
	switch {
	case kind == model.KindClient && IsMethodName(name):
		return Ungated
	case kind == model.KindInternal && IsRouteName(name):
		return Server
	}
	return Unclassified
}

// Kept reports whether a span of group g exists under spec: groups that no
// spec names (unclassified, ungated) always do.
func Kept(g Group, spec Set) bool {
	return g == Unclassified || g == Ungated || spec.Has(g)
}

// attrRules returns the attribute keys rules read; everything else depends on
// names and kinds only and can be memoized.
func (r *Registry) attrRules() []string {
	var keys []string
	for _, rule := range r.rules {
		if rule.Attr != "" {
			keys = append(keys, rule.Attr)
		}
	}
	return keys
}

func (rule *Rule) match(name string, kind model.Kind, hasParent bool, parentName string, parentKind model.Kind) bool {
	if rule.Kind != "" && rule.Kind != kind.String() {
		return false
	}
	if rule.Name != "" && name != rule.Name {
		return false
	}
	if rule.Prefix != "" {
		if !strings.HasPrefix(name, rule.Prefix) {
			return false
		}
		if rule.Method && !isMethod(name[len(rule.Prefix):]) {
			return false
		}
	}
	if rule.Suffix != "" {
		if !strings.HasSuffix(name, rule.Suffix) {
			return false
		}
		if rule.ParentKind != "" && hasParent {
			// A request span made INTERNAL by a context carry-over keeps
			// its ASGI children.
			kindOK := parentKind.String() == rule.ParentKind ||
				(rule.ParentKind == "SERVER" && parentKind == model.KindInternal && IsRouteName(parentName))
			if !kindOK || parentName+rule.Suffix != name {
				return false
			}
		}
	}
	return true
}

// IsMethodName reports whether name is a bare HTTP method ("POST"): the name
// FastAPI gives a request span whose route it could not match, and the name
// of the aiohttp client instrumentation's CLIENT spans.
func IsMethodName(name string) bool { return name != "" && isMethod(name) }

// IsRouteName reports whether name is what the ASGI middleware names a
// request span: "<METHOD> <route template>" or a bare "<METHOD>".
func IsRouteName(name string) bool {
	m, rest, ok := strings.Cut(name, " ")
	if !ok {
		return IsMethodName(name)
	}
	return IsMethodName(m) && strings.HasPrefix(rest, "/") && !strings.Contains(rest, " ")
}

func isMethod(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 'A' || s[i] > 'Z' {
			return false
		}
	}
	return true
}

// classKey is what a classification depends on when no attribute rule fires.
type classKey struct {
	name, parentName model.Str
	kind, parentKind model.Kind
	hasParent        bool
}

// Classifier memoizes Classify by name and kind, and checks the attribute
// rules per span. It belongs to one engine and one interner.
type Classifier struct {
	reg   *Registry
	in    *model.Interner
	attrs []string
	ids   []model.Str // attrs' interned ids, noKey while not interned
	idsN  int         // the interner's length when ids were resolved
	// memo is keyed by packedClassKey where ids and kinds fit; wide by
	// the whole classKey otherwise.
	memo map[uint64]Group
	wide map[classKey]Group
}

// NewClassifier returns a classifier of reg's rules for spans of in.
func NewClassifier(reg *Registry, in *model.Interner) *Classifier {
	c := &Classifier{reg: reg, in: in, attrs: reg.attrRules(), memo: map[uint64]Group{}, wide: map[classKey]Group{}}
	c.ids = make([]model.Str, len(c.attrs))
	c.idsN = -1
	c.Resolve()
	return c
}

// Resolve looks the attribute rules' keys up again once the interner grew:
// a key not interned is on no span, and its rule is skipped without a walk.
func (c *Classifier) Resolve() {
	if n := c.in.Len(); n != c.idsN {
		for i, k := range c.attrs {
			c.ids[i] = lookupKey(c.in, k)
		}
		c.idsN = n
	}
}

// packedClassKey packs k into 59 bits when its ids fit the interner's
// 26-bit range and its kinds 3 bits: a map keyed by one word hashes fast.
func packedClassKey(k classKey) (uint64, bool) {
	if k.name >= 1<<26 || k.parentName >= 1<<26 || k.kind >= 8 || k.parentKind >= 8 {
		return 0, false
	}
	p := uint64(k.name) | uint64(k.parentName)<<26 | uint64(k.kind)<<52 | uint64(k.parentKind)<<55
	if k.hasParent {
		p |= 1 << 58
	}
	return p, true
}

// Classify is Registry.Classify, memoized.
func (c *Classifier) Classify(sp *model.Span, parent *model.Span) Group {
	if !sp.Attrs.Empty() {
		for _, id := range c.ids {
			if id == noKey {
				continue
			}
			if v, ok := sp.Attrs.GetKey(c.in, id); ok {
				if g, ok := c.reg.Lookup(strings.ToLower(strings.TrimSpace(v.String()))); ok {
					return g
				}
			}
		}
	}
	k := classKey{name: sp.Name, kind: sp.Kind}
	if parent != nil {
		k.hasParent, k.parentName, k.parentKind = true, parent.Name, parent.Kind
	}
	p, packed := packedClassKey(k)
	if packed {
		if g, ok := c.memo[p]; ok {
			return g
		}
	} else if g, ok := c.wide[k]; ok {
		return g
	}
	g := c.reg.classifyByName(c.in.Str(sp.Name), sp.Kind, parent != nil, c.in.Str(k.parentName), k.parentKind)
	if packed {
		c.memo[p] = g
	} else {
		c.wide[k] = g
	}
	return g
}

// classifyByName applies the rules that do not read attributes.
func (r *Registry) classifyByName(name string, kind model.Kind, hasParent bool, parentName string, parentKind model.Kind) Group {
	for i := range r.rules {
		rule := &r.rules[i]
		if rule.Attr != "" {
			continue
		}
		if rule.match(name, kind, hasParent, parentName, parentKind) {
			return rule.Group
		}
	}
	return fallbackGroup(name, kind)
}

// noKey stands for a key the interner does not hold: no span carries it, and
// no attribute's id equals it.
const noKey = model.Str(math.MaxUint32)

func lookupKey(in *model.Interner, s string) model.Str {
	if id, ok := in.Lookup(s); ok {
		return id
	}
	return noKey
}
