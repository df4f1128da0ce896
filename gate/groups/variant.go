package groups

import (
	"embed"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
)

// A variant file is a groups file (see Load) describing one NeMo Gym
// telemetry variant in full, with these keys besides groups, presets and
// rules:
//
//	variant: G3                  # the name --gym-version accepts
//	order: 4                     # newer variants have larger numbers
//	description: ...
//	detect:                      # how a capture tells (see DetectVariant)
//	  gym_versions: ["0.7.0"]    # resource nemo.gym.version
//	  driver_suffixes: ["/supervisor"] # the driver's service.name ends so
//	  driver_types: ["supervisor"] # the driver's nemo.gym.server.type
//	  resource_keys: ["nv.dl.rank"] # a Gym process's resource has these keys, and lacks those written !key
//	  names: ["gym.startup*"]    # span or metric names only it emits
//	unknown_names: drop          # drop (warn, apply the rest) | disable (telemetry off)
//	all:
//	  membership: open           # open: every registered group | fixed: this file's groups
//	  description: ...
//
// A group entry may say matched: "<text>" for spans the shared structural
// rules select (server, http_client), shown in help instead of patterns.
// Adding a Gym variant is adding one file under variants/.

//go:embed variants/*.yaml
var variantFiles embed.FS

// Variant is one NeMo Gym telemetry variant: its registry (groups, presets,
// rules, spec grammar) and how a capture reveals it.
type Variant struct {
	Name        string
	Description string
	// Order sorts variants, oldest first.
	Order int
	// GymVersions are the resource nemo.gym.version values it ships as.
	GymVersions []string
	// DriverSuffixes end the driver process's service.name.
	DriverSuffixes []string
	// DriverTypes are the driver process's nemo.gym.server.type values.
	DriverTypes []string
	// ResourceKeys are resource keys one Gym process's resource has, and,
	// written "!key", keys it lacks: all of them must hold.
	ResourceKeys []string
	// Names are span or metric name patterns ("gym.startup*") only it emits.
	Names []string
	// File is the embedded file it was read from.
	File string

	reg *Registry
}

// Registry returns the variant's registry. It is shared: extend it with
// Load, which copies.
func (v *Variant) Registry() *Registry { return v.reg }

// DropsUnknown reports whether Gym drops a name it does not know (with a
// warning) rather than switching telemetry off.
func (v *Variant) DropsUnknown() bool { return v.reg.drop }

var loadedVariants = sync.OnceValues(func() ([]*Variant, error) {
	entries, err := variantFiles.ReadDir("variants")
	if err != nil {
		return nil, err
	}
	var out []*Variant
	for _, e := range entries {
		name := path.Join("variants", e.Name())
		src, err := variantFiles.ReadFile(name)
		if err != nil {
			return nil, err
		}
		v, err := LoadVariant("gate/"+name, src)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Order < out[j].Order })
	for i := 1; i < len(out); i++ {
		if out[i].Order == out[i-1].Order {
			return nil, fmt.Errorf("%s and %s: both have order %d", out[i-1].File, out[i].File, out[i].Order)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no variant files embedded")
	}
	return out, nil
})

// Variants returns every known Gym variant, oldest first.
func Variants() []*Variant {
	vs, err := loadedVariants()
	if err != nil {
		// The files are embedded and checked by the tests: a broken one is
		// a build defect, not an input error.
		panic("gate: embedded variant files: " + err.Error())
	}
	return vs
}

// Newest returns the newest variant: the one assumed when nothing says which.
func Newest() *Variant {
	vs := Variants()
	return vs[len(vs)-1]
}

// VariantNames returns the variant names, oldest first.
func VariantNames() []string {
	var out []string
	for _, v := range Variants() {
		out = append(out, v.Name)
	}
	return out
}

// LookupVariant finds a variant by name (case-insensitive: "G1", "g1c") or
// by a Gym version it ships as ("0.5.1": the oldest variant listing it).
func LookupVariant(name string) (*Variant, error) {
	want := strings.TrimSpace(name)
	for _, v := range Variants() {
		if strings.EqualFold(v.Name, want) {
			return v, nil
		}
	}
	for _, v := range Variants() {
		for _, ver := range v.GymVersions {
			if ver == want {
				return v, nil
			}
		}
	}
	var versions []string
	for _, v := range Variants() {
		versions = append(versions, v.GymVersions...)
	}
	return nil, fmt.Errorf("unknown Gym variant %q: want one of %s, or a Gym version (%s)",
		name, strings.Join(VariantNames(), ", "), strings.Join(dedupe(versions), ", "))
}

func dedupe(xs []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// baseRegistry holds what every variant shares: the placeholders of the
// built-in groups (known to none until a file names them) and the
// structural classification rules.
func baseRegistry() *Registry {
	r := &Registry{groups: make([]GroupInfo, numBuiltin), rules: defaultRules()}
	for i, n := range builtinNames {
		r.groups[i] = GroupInfo{Group: Group(i), Name: n}
	}
	return r
}

// LoadVariant reads a variant file (filename is used in messages). Every
// problem is reported with file:line as an ErrorList.
func LoadVariant(filename string, src []byte) (*Variant, error) {
	root, err := parseYAML(filename, src)
	if err != nil {
		return nil, err
	}
	var errs ErrorList
	bad := func(n *yaml.Node, format string, args ...any) {
		errs = append(errs, Problem{File: filename, Line: n.Line, Column: n.Column, Msg: fmt.Sprintf(format, args...)})
	}
	if root == nil || root.Kind != yaml.MappingNode {
		return nil, ErrorList{{File: filename, Line: 1, Column: 1, Msg: "a variant file is a mapping with variant, order, groups and presets"}}
	}
	v := &Variant{File: filename}
	rest := &yaml.Node{Kind: yaml.MappingNode, Line: root.Line, Column: root.Column}
	var drop, open, sawUnknown, sawAll bool
	allDesc := ""
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, val := root.Content[i], root.Content[i+1]
		switch k.Value {
		case "variant":
			v.Name = scalar(val, bad, "variant")
		case "description":
			v.Description = scalar(val, bad, "description")
		case "order":
			n, err := strconv.Atoi(val.Value)
			if err != nil || val.Kind != yaml.ScalarNode || n <= 0 {
				bad(val, "order must be a positive integer")
			}
			v.Order = n
		case "detect":
			f := fields(val, bad, "gym_versions", "driver_suffixes", "driver_types", "resource_keys", "names")
			if f == nil {
				continue
			}
			for _, n := range f.list("driver_types", bad) {
				v.DriverTypes = append(v.DriverTypes, n.Value)
			}
			for _, n := range f.list("resource_keys", bad) {
				if strings.TrimPrefix(n.Value, "!") == "" {
					bad(n, "resource key %q: want a key, or !key for one the resource lacks", n.Value)
					continue
				}
				v.ResourceKeys = append(v.ResourceKeys, n.Value)
			}
			for _, n := range f.list("gym_versions", bad) {
				v.GymVersions = append(v.GymVersions, n.Value)
			}
			for _, n := range f.list("driver_suffixes", bad) {
				v.DriverSuffixes = append(v.DriverSuffixes, n.Value)
			}
			for _, n := range f.list("names", bad) {
				if _, ok := patternRule(n.Value); !ok {
					bad(n, "name pattern %q: use a name, name*, or *name", n.Value)
					continue
				}
				v.Names = append(v.Names, n.Value)
			}
		case "unknown_names":
			sawUnknown = true
			switch val.Value {
			case "drop":
				drop = true
			case "disable":
			default:
				bad(val, "unknown_names %q: want drop (Gym warns and applies the rest) or disable (Gym switches telemetry off)", val.Value)
			}
		case "all":
			sawAll = true
			f := fields(val, bad, "membership", "description")
			if f == nil {
				continue
			}
			allDesc = f.str("description", bad, true)
			switch m := f.str("membership", bad, true); m {
			case "open":
				open = true
			case "fixed", "":
			default:
				bad(f.at("membership"), "all.membership %q: want open (every registered group) or fixed (this file's groups)", m)
			}
		case "groups", "presets", "rules":
			rest.Content = append(rest.Content, k, val)
		default:
			bad(k, "unknown key %q (want variant, order, description, detect, unknown_names, all, groups, presets or rules)", k.Value)
		}
	}
	switch {
	case v.Name == "":
		bad(root, "missing variant (its name)")
	case v.Order == 0:
		bad(root, "missing order")
	case !sawUnknown:
		bad(root, "missing unknown_names (drop or disable)")
	case !sawAll:
		bad(root, "missing all (membership and description)")
	}
	if len(errs) > 0 {
		return nil, errs
	}
	reg, err := baseRegistry().loadNode(filename, rest)
	if err != nil {
		return nil, err
	}
	if _, ok := reg.PresetSet("default"); !ok {
		return nil, ErrorList{{File: filename, Line: root.Line, Column: root.Column, Msg: "no default preset: Gym reads a blank span_groups as default"}}
	}
	reg.variant, reg.drop, reg.openAll = v.Name, drop, open
	reg.allFixed = reg.known
	reg.presets = append(reg.presets, Preset{Name: "all", Description: allDesc})
	v.reg = reg
	return v, nil
}

func scalar(n *yaml.Node, bad func(*yaml.Node, string, ...any), key string) string {
	if n.Kind != yaml.ScalarNode || n.Value == "" {
		bad(n, "%s must be a non-empty string", key)
		return ""
	}
	return n.Value
}
