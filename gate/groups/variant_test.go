package groups

import (
	"errors"
	"strings"
	"testing"
)

func setOf(gs ...Group) Set {
	var s Set
	for _, g := range gs {
		s = s.With(g)
	}
	return s
}

var training = []Group{Checkpoint, Evaluate, ModelInit, LoadCheckpoint, Step, ForwardBackward, Optimizer}

func TestVariantFiles(t *testing.T) {
	vs := Variants()
	var names []string
	for _, v := range vs {
		names = append(names, v.Name)
		if v.Description == "" || v.File == "" {
			t.Errorf("%s: description %q, file %q", v.Name, v.Description, v.File)
		}
		reg := v.Registry()
		if reg.Variant() != v.Name {
			t.Errorf("%s: registry says %q", v.Name, reg.Variant())
		}
		for _, gi := range reg.Groups() {
			if g, ok := builtinGroup(gi.Name); !ok || g != gi.Group {
				t.Errorf("%s: group %q has bit %d, not its built-in constant", v.Name, gi.Name, gi.Group)
			}
			if gi.Description == "" {
				t.Errorf("%s: group %q has no description", v.Name, gi.Name)
			}
		}
		for _, p := range []string{"default", "per_rollout", "all"} {
			if _, ok := reg.PresetSet(p); !ok {
				t.Errorf("%s: no %s preset", v.Name, p)
			}
		}
		// Rules only name groups the variant knows.
		for _, r := range reg.Rules() {
			if r.Attr == "" && !reg.Known(r.Group) {
				t.Errorf("%s: rule %s names unknown group %d", v.Name, r, r.Group)
			}
		}
	}
	if got := strings.Join(names, " "); got != "G1 G1c G2 G3" {
		t.Errorf("variants = %s, want G1 G1c G2 G3, oldest first", got)
	}
	if Newest().Name != "G3" || Default() != Newest().Registry() {
		t.Errorf("newest = %s; Default must be its registry", Newest().Name)
	}
}

func TestVariantGroupsAndPresets(t *testing.T) {
	spine := []Group{Server, HTTPClient, Rollout}
	gymGroups := append([]Group{Job, Agent, ModelCall, Verify, Sandbox}, spine...)
	perRollout := setOf(append(spine, Verify, Agent, ModelCall)...)
	cases := []struct {
		variant             string
		groups              Set
		def, perRoll, allPr Set
		drops, openAll      bool
	}{
		{"G1", setOf(append(gymGroups, training...)...), setOf(Job, Server, HTTPClient, Rollout), perRollout, setOf(append(gymGroups, training...)...), false, false},
		{"G1c", setOf(append(append(gymGroups, training...), Concurrency)...), setOf(Job, Server, HTTPClient, Rollout), perRollout.With(Concurrency), setOf(append(append(gymGroups, training...), Concurrency)...), false, false},
		{"G2", setOf(gymGroups...), setOf(Job, Server, HTTPClient, Rollout), perRollout, setOf(gymGroups...), true, true},
		{"G3", setOf(gymGroups...).With(Startup), setOf(Job, Startup, Server, HTTPClient, Rollout), perRollout, setOf(gymGroups...).With(Startup), true, true},
	}
	for _, tc := range cases {
		t.Run(tc.variant, func(t *testing.T) {
			v := variant(t, tc.variant)
			reg := v.Registry()
			if reg.All() != tc.groups {
				t.Errorf("groups = %v, want %v", reg.Names(reg.All()), reg.Names(tc.groups))
			}
			if n := len(reg.Groups()); n != tc.groups.Len() {
				t.Errorf("Groups() lists %d, want %d", n, tc.groups.Len())
			}
			for name, want := range map[string]Set{"default": tc.def, "per_rollout": tc.perRoll, "all": tc.allPr} {
				if got, _ := reg.PresetSet(name); got != want {
					t.Errorf("%s = %v, want %v", name, reg.Names(got), reg.Names(want))
				}
				if res := reg.Resolve(name); res.Set != tc.allPr && name == "all" || res.Off || res.Dropped != nil {
					t.Errorf("Resolve(%q) = %+v", name, res)
				}
			}
			if v.DropsUnknown() != tc.drops || reg.openAll != tc.openAll {
				t.Errorf("drops %v, open all %v; want %v, %v", v.DropsUnknown(), reg.openAll, tc.drops, tc.openAll)
			}
			// A group the variant lacks is unknown to its parser.
			for g := Group(0); g < numBuiltin; g++ {
				_, err := reg.Parse(builtinNames[g])
				if tc.groups.Has(g) != (err == nil) {
					t.Errorf("Parse(%q) error %v; known %v", builtinNames[g], err, tc.groups.Has(g))
				}
			}
		})
	}
}

func TestResolveTelemetryOff(t *testing.T) {
	for _, name := range []string{"G1", "G1c"} {
		reg := variant(t, name).Registry()
		// A copied-out default,concurrency from a registry that had
		// concurrency switches all of G1's telemetry off.
		res := reg.Resolve("default, Sandbx ,concurrency")
		if !res.Off || res.Set != 0 || res.Dropped != nil {
			t.Fatalf("%s: Resolve = %+v, want telemetry off", name, res)
		}
		valid := "['agent', 'all', 'checkpoint', 'default', 'evaluate', 'forward_backward', 'http_client', 'job', 'load_checkpoint', 'model_call', 'model_init', 'optimizer', 'per_rollout', 'rollout', 'sandbox', 'server', 'step', 'verify']"
		if name == "G1c" {
			valid = strings.Replace(valid, "'checkpoint', ", "'checkpoint', 'concurrency', ", 1)
		}
		want := "Unknown span group or preset: 'sandbx'. Valid options: " + valid
		if res.Message != want {
			t.Errorf("%s message\n got %s\nwant %s", name, res.Message, want)
		}
		if !strings.Contains(res.Effect(), "switches telemetry off in every process") {
			t.Errorf("%s effect %q", name, res.Effect())
		}
	}
	// G1 has no concurrency: the spec a G1c user would copy is refused.
	if res := variant(t, "G1").Registry().Resolve("default,concurrency"); !res.Off || !strings.HasPrefix(res.Message, "Unknown span group or preset: 'concurrency'.") {
		t.Errorf("G1 default,concurrency = %+v", res)
	}
}

func TestResolveDrops(t *testing.T) {
	for _, name := range []string{"G2", "G3"} {
		reg := variant(t, name).Registry()
		res := reg.Resolve("default,step, concurrency,STEP,verify")
		def, _ := reg.PresetSet("default")
		if res.Off || res.Set != def.With(Verify) || strings.Join(res.Dropped, ",") != "step,concurrency" {
			t.Fatalf("%s: Resolve = %+v", name, res)
		}
		for _, s := range []string{"Span group spec 'default,step, concurrency,STEP,verify' names ['concurrency', 'step'], which no library registered in this process provides",
			"Presets: ['all', 'default', 'per_rollout']"} {
			if !strings.Contains(res.Message, s) {
				t.Errorf("%s message %q lacks %q", name, res.Message, s)
			}
		}
		if res.Effect() != `Gym drops "step", "concurrency" with a warning and applies the rest` {
			t.Errorf("%s effect %q", name, res.Effect())
		}
		// Everything dropped: nothing group-gated is emitted, telemetry stays on.
		if res := reg.Resolve("tool_call"); res.Off || res.Set != 0 || len(res.Dropped) != 1 {
			t.Errorf("%s tool_call = %+v", name, res)
		}
	}
}

func TestResolveGrammar(t *testing.T) {
	for _, v := range Variants() {
		reg := v.Registry()
		def, _ := reg.PresetSet("default")
		cases := []struct {
			spec string
			want Set
			dflt bool
		}{
			{"", def, true},
			{"  \t", def, true},
			{" , ,", 0, false}, // not blank: Gym resolves it to no group at all
			{" Server ,HTTP_CLIENT,, verify ", setOf(Server, HTTPClient, Verify), false},
			{"server,default,server", def, false},
		}
		for _, tc := range cases {
			res := reg.Resolve(tc.spec)
			if res.Set != tc.want || res.Default != tc.dflt || res.Off || res.Dropped != nil {
				t.Errorf("%s: Resolve(%q) = %+v, want %v", v.Name, tc.spec, res, reg.Names(tc.want))
			}
		}
	}
}

func TestCopyOut(t *testing.T) {
	g1, g1cr, g3 := variant(t, "G1").Registry(), variant(t, "G1c").Registry(), variant(t, "G3").Registry()
	perRollout, _ := g1cr.PresetSet("per_rollout")
	cases := []struct {
		name string
		reg  *Registry
		set  Set
		want string
		err  error
		has  string
	}{
		{"G1 default", g1, setOf(Job, Server, HTTPClient, Rollout), "default", nil, ""},
		{"G1c per_rollout", g1cr, perRollout, "per_rollout", nil, ""},
		{"G1 refuses concurrency", g1, setOf(Job, Server, HTTPClient, Rollout, Concurrency), "", ErrNotGymSpec, `"concurrency" is unknown to Gym G1`},
		{"G3 refuses training groups", g3, setOf(Job, Step), "", ErrNotGymSpec, `"step" is unknown to Gym G3`},
		{"G1 nothing", g1, 0, "", ErrNothingSelected, "blank span_groups as default"},
		{"G3 nothing", g3, 0, "", ErrNothingSelected, "telemetry.enabled: false"},
		{"G3 startup", g3, setOf(Startup, Server), "server,startup", nil, ""},
		{"G3 all", g3, g3.All(), "all", nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.reg.CopyOut(tc.set)
			if tc.err != nil {
				if !errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.has) {
					t.Fatalf("CopyOut(%v) = %q, %v; want %v containing %q", tc.reg.Names(tc.set), got, err, tc.err, tc.has)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("CopyOut(%v) = %q, %v; want %q", tc.reg.Names(tc.set), got, err, tc.want)
			}
			if res := tc.reg.Resolve(got); res.Off || res.Dropped != nil || res.Set&^tc.reg.silent() != tc.set&^tc.reg.silent() {
				t.Errorf("Gym reads %q as %+v", got, res)
			}
		})
	}
	// Every subset of each variant's groups copies out to a spec Gym
	// applies as meant, or is refused.
	for _, v := range Variants() {
		reg := v.Registry()
		groups := reg.order
		for m := 1; m < 1<<min(len(groups), 10); m++ {
			var s Set
			for i, g := range groups[:min(len(groups), 10)] {
				if m&(1<<i) != 0 {
					s = s.With(g)
				}
			}
			spec, err := reg.CopyOut(s)
			if err != nil {
				t.Fatalf("%s: CopyOut(%v): %v", v.Name, reg.Names(s), err)
			}
			if res := reg.Resolve(spec); res.Off || res.Dropped != nil {
				t.Fatalf("%s: CopyOut(%v) = %q, which Gym does not apply: %+v", v.Name, reg.Names(s), spec, res)
			}
		}
	}
}

func TestLookupVariant(t *testing.T) {
	for in, want := range map[string]string{"G1": "G1", "g1c": "G1c", " g3 ": "G3", "0.5.1": "G1", "0.7.0rc0": "G3", "0.7.0": "G3"} {
		v, err := LookupVariant(in)
		if err != nil || v.Name != want {
			t.Errorf("LookupVariant(%q) = %v, %v; want %s", in, v, err, want)
		}
	}
	_, err := LookupVariant("G9")
	if err == nil || !strings.Contains(err.Error(), `unknown Gym variant "G9": want one of G1, G1c, G2, G3, or a Gym version (0.5.1, 0.7.0rc0, 0.7.0)`) {
		t.Errorf("LookupVariant(G9) error = %v", err)
	}
}

func TestLoadVariantErrors(t *testing.T) {
	cases := []struct{ name, src, want string }{
		{"missing keys", "variant: G9\ngroups: []\n", "v.yaml:1:1: missing order"},
		{"bad grammar", "variant: G9\norder: 9\nunknown_names: warn\nall: {membership: open, description: d}\n",
			`v.yaml:3:16: unknown_names "warn": want drop (Gym warns and applies the rest) or disable (Gym switches telemetry off)`},
		{"bad all", "variant: G9\norder: 9\nunknown_names: drop\nall: {membership: some, description: d}\n",
			`v.yaml:4:19: all.membership "some": want open (every registered group) or fixed (this file's groups)`},
		{"unknown key", "variant: G9\norder: 9\ncolour: red\n", `v.yaml:3:1: unknown key "colour"`},
		{"empty resource key", "variant: G9\norder: 9\ndetect: {resource_keys: [dl.rank, \"!\"]}\n",
			`v.yaml:3:35: resource key "!": want a key, or !key for one the resource lacks`},
		{"no default", "variant: G9\norder: 9\nunknown_names: drop\nall: {membership: open, description: d}\ngroups:\n  - {name: job, description: d, spans: gym.job}\n",
			"v.yaml:1:1: no default preset"},
		{"group problem", "variant: G9\norder: 9\nunknown_names: drop\nall: {membership: open, description: d}\ngroups:\n  - {name: job, spans: gym.job}\n",
			"v.yaml:6:5: missing description"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadVariant("v.yaml", []byte(tc.src))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("LoadVariant error = %v, want %q", err, tc.want)
			}
		})
	}
	// A new variant is one file: this one loads, with the grammar it says.
	v, err := LoadVariant("g9.yaml", []byte(`variant: G9
order: 9
description: a future Gym
unknown_names: disable
all: {membership: fixed, description: every group}
groups:
  - {name: job, description: the run, spans: gym.job}
  - {name: server, description: servers, matched: "<METHOD> <route>"}
  - {name: warmup, description: new, spans: "gym.warmup*"}
presets:
  - {name: default, description: d, groups: [job, server, warmup]}
  - {name: per_rollout, description: p, groups: [server]}
`))
	if err != nil {
		t.Fatal(err)
	}
	reg := v.Registry()
	if res := reg.Resolve("default,nope"); !res.Off {
		t.Errorf("G9 unknown name = %+v, want telemetry off", res)
	}
	warmup, ok := reg.Lookup("warmup")
	if def, _ := reg.PresetSet("default"); !ok || def != setOf(Job, Server, warmup) || warmup < numBuiltin {
		t.Errorf("G9 default = %v (warmup %d %v)", reg.Names(def), warmup, ok)
	}
	if !reg.Info(Server).EmitsSpans || reg.Info(Server).Spans != "<METHOD> <route>" {
		t.Errorf("server = %+v, want spans by the structural rules", reg.Info(Server))
	}
}
