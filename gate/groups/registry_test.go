package groups

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/nemo-gym/gymtrace/model"
)

func TestRegistry(t *testing.T) {
	r := g1c()
	seen := map[string]bool{}
	for i, g := range r.Groups() {
		if g.Name == "" || g.Description == "" || seen[g.Name] {
			t.Errorf("group %d: name %q description %q (duplicate: %v)", i, g.Name, g.Description, seen[g.Name])
		}
		seen[g.Name] = true
	}
	for _, p := range r.Presets() {
		if p.Description == "" || seen[p.Name] {
			t.Errorf("preset %q: empty description or clashes with a group", p.Name)
		}
	}
	if all, _ := r.PresetSet("all"); all != r.All() || all.Len() != 16 || all.Has(Startup) {
		t.Errorf("all = %v, want the 16 groups of G1c", r.Names(all))
	}
}

func TestParse(t *testing.T) {
	r := g1c()
	cases := []struct {
		name, spec string
		want       []Group // nil with an error
		err        error
		errHas     []string
	}{
		{name: "preset", spec: "default", want: []Group{Job, Server, HTTPClient, Rollout}},
		{name: "per_rollout", spec: "per_rollout", want: []Group{Server, HTTPClient, Rollout, Agent, ModelCall, Verify, Concurrency}},
		{name: "preset plus group", spec: "default,sandbox", want: []Group{Job, Server, HTTPClient, Rollout, Sandbox}},
		{name: "groups", spec: "server,http_client,verify", want: []Group{Server, HTTPClient, Verify}},
		{name: "odd spacing and case", spec: "  Server ,HTTP_CLIENT,\tverify  ", want: []Group{Server, HTTPClient, Verify}},
		{name: "empty parts ignored", spec: ",,server,,", want: []Group{Server}},
		{name: "duplicates are a union", spec: "server,server,default", want: []Group{Job, Server, HTTPClient, Rollout}},
		{name: "all", spec: "ALL", want: []Group{Job, Server, HTTPClient, Rollout, Agent, ModelCall, Verify, Sandbox, Concurrency, Checkpoint, Evaluate, ModelInit, LoadCheckpoint, Step, ForwardBackward, Optimizer}},
		{name: "empty", spec: "", err: ErrEmptySpec, errHas: []string{"default", "per_rollout", "all"}},
		{name: "only commas", spec: " , ,", err: ErrEmptySpec},
		{name: "typo lists every option", spec: "default,sandbx", err: ErrUnknownGroup,
			errHas: append([]string{`"sandbx"`, "default", "per_rollout", "all"}, g1c().groupNames()...)},
		{name: "no tool_call group", spec: "tool_call", err: ErrUnknownGroup, errHas: []string{`"tool_call"`}},
		{name: "every unknown named", spec: "dataset, tool_call", err: ErrUnknownGroup, errHas: []string{`"dataset", "tool_call"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := r.Parse(tc.spec)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("Parse(%q) error = %v, want %v", tc.spec, err, tc.err)
				}
				for _, s := range tc.errHas {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("Parse(%q) error %q lacks %q", tc.spec, err, s)
					}
				}
				return
			}
			var want Set
			for _, g := range tc.want {
				want = want.With(g)
			}
			if err != nil || got != want {
				t.Errorf("Parse(%q) = %v, %v; want %v", tc.spec, r.Names(got), err, r.Names(want))
			}
		})
	}
}

func TestFormat(t *testing.T) {
	r := g1c()
	cases := []struct{ spec, want string }{
		{"default", "default"},
		{"per_rollout", "per_rollout"},
		{"all", "all"},
		{"default,sandbox", "default,sandbox"},
		{"server,http_client,verify", "server,http_client,verify"},
		{"job,server", "job,server"},
		{"per_rollout,job", "per_rollout,job"},
	}
	for _, tc := range cases {
		s := mustParse(t, tc.spec)
		got := r.Format(s)
		if got != tc.want {
			t.Errorf("Format(Parse(%q)) = %q, want %q", tc.spec, got, tc.want)
		}
		if back, err := r.Parse(got); err != nil || back != s {
			t.Errorf("Parse(Format(%q)) = %v, %v; want %v", tc.spec, back, err, s)
		}
	}
	// Every subset of the first 10 groups round-trips.
	for m := Set(1); m < 1<<10; m++ {
		if back, err := r.Parse(r.Format(m)); err != nil || back != m {
			t.Fatalf("Parse(Format(%b)) = %b, %v", m, back, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"default", "per_rollout,sandbox", " Server , http_client", "all", "", ",", "jbo", "default,,verify"} {
		f.Add(s)
	}
	r := g1c()
	f.Fuzz(func(t *testing.T, spec string) {
		s, err := r.Parse(spec)
		if err != nil {
			if !errors.Is(err, ErrUnknownGroup) && !errors.Is(err, ErrEmptySpec) {
				t.Fatalf("Parse(%q) error %v is neither unknown nor empty", spec, err)
			}
			return
		}
		text := r.Format(s)
		back, err := r.Parse(text)
		if err != nil || back != s {
			t.Fatalf("Parse(%q) = %v; Format = %q; reparsed %v, %v", spec, s, text, back, err)
		}
		if r.Format(back) != text {
			t.Fatalf("Format is not stable for %q", spec)
		}
	})
}

func TestClassify(t *testing.T) {
	st := model.NewStore(model.Options{})
	defer st.Close()
	in := st.Interner()
	l := model.NewLocal(in)
	mk := func(name string, kind model.Kind, attrs ...kv) *model.Span {
		var b model.AttrBuilder
		for _, a := range attrs {
			b.String(l, l.Intern([]byte(a.K)), []byte(a.V.(string)))
		}
		return &model.Span{Name: l.Intern([]byte(name)), Kind: kind, Attrs: b.Attrs()}
	}
	server := mk("POST /run", model.KindServer)
	client := mk("HTTP POST", model.KindClient)
	reg, err := g1c().Load("extra.yaml", []byte("groups:\n  - name: startup\n    description: start-up\n    spans: gym.startup*\n"))
	if err != nil {
		t.Fatal(err)
	}
	startup, _ := reg.Lookup("startup")
	cases := []struct {
		name   string
		reg    *Registry
		span   *model.Span
		parent *model.Span
		want   Group
	}{
		{"job", nil, mk("gym.job", model.KindInternal), nil, Job},
		{"rollout", nil, mk("gym.rollout", model.KindInternal), server, Rollout},
		{"agent", nil, mk("gym.agent.responses", model.KindInternal), nil, Agent},
		{"model chat", nil, mk("gym.model.chat_completions", model.KindInternal), nil, ModelCall},
		{"model messages", nil, mk("gym.model.messages", model.KindInternal), nil, ModelCall},
		{"verify", nil, mk("gym.verify", model.KindInternal), nil, Verify},
		{"sandbox start", nil, mk("gym.sandbox.start", model.KindInternal), nil, Sandbox},
		{"sandbox exec", nil, mk("gym.sandbox.exec", model.KindInternal), nil, Sandbox},
		{"server", nil, server, client, Server},
		{"tool call is a server span", nil, mk("POST /get_weather", model.KindServer), client, Server},
		{"asgi receive under its server", nil, mk("POST /run http receive", model.KindInternal), server, Server},
		{"asgi send under its server", nil, mk("POST /run http send", model.KindInternal), server, Server},
		{"asgi child, parent not arrived", nil, mk("POST /verify http send", model.KindInternal), nil, Server},
		{"asgi-like name under another span", nil, mk("POST /verify http send", model.KindInternal), server, Unclassified},
		{"asgi-like name under a non-server", nil, mk("HTTP POST http send", model.KindInternal), client, Unclassified},
		{"client", nil, client, nil, HTTPClient},
		{"client get", nil, mk("HTTP GET", model.KindClient), nil, HTTPClient},
		{"client with odd name", nil, mk("HTTP post", model.KindClient), nil, Unclassified},
		{"internal named like a client", nil, mk("HTTP POST", model.KindInternal), nil, Unclassified},
		{"unknown gym span", nil, mk("gym.other", model.KindInternal), nil, Unclassified},
		{"explicit attribute wins", nil, mk("gym.rollout", model.KindInternal, kv{K: SpanGroupAttr, V: "Verify"}), nil, Verify},
		{"explicit unknown attribute ignored", nil, mk("gym.rollout", model.KindInternal, kv{K: SpanGroupAttr, V: "nope"}), nil, Rollout},
		{"groups file rule", reg, mk("gym.startup.load", model.KindInternal), nil, startup},
		{"groups file keeps built-ins", reg, mk("gym.verify", model.KindInternal), nil, Verify},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.reg
			if r == nil {
				r = g1c()
			}
			got := r.Classify(in, tc.span, tc.parent)
			if got != tc.want {
				t.Errorf("Classify(%q) = %s, want %s", in.Str(tc.span.Name), r.Name(got), r.Name(tc.want))
			}
			// The engine's memoized classifier agrees.
			c := NewClassifier(r, in)
			for i := 0; i < 2; i++ {
				if g := c.Classify(tc.span, tc.parent); g != got {
					t.Errorf("memoized classify = %s, want %s", r.Name(g), r.Name(got))
				}
			}
		})
	}
}

func TestGroupsFile(t *testing.T) {
	cases := []struct {
		name, src string
		errs      []string // nil: loads
	}{
		{name: "startup group and preset", src: `
groups:
  - name: startup
    description: server start-up phases
    spans: ["gym.startup*"]
    kind: INTERNAL
presets:
  - name: debug_startup
    description: default plus start-up
    groups: [default, startup]
rules:
  - group: server
    name: "GET /health"
`},
		{name: "empty file", src: ""},
		{name: "every problem with its line", src: `
groups:
  - name: Startup
    description: x
  - name: server
    description: clash
  - name: ok_group
    spans: ["a*b*"]
    colour: red
presets:
  - name: p
    description: d
    groups: [defualt]
rules:
  - group: nope
    name: x
  - group: server
bogus: 1
`, errs: []string{
			`g.yaml:3:11: group name "Startup" must be snake_case (lower-case letters, digits, single underscores)`,
			`g.yaml:5:11: group "server" is already defined`,
			`g.yaml:7:5: missing description`,
			`g.yaml:8:13: span pattern "a*b*": use a name, name*, or *name`,
			`g.yaml:9:5: unknown key "colour" (want name, description, spans, kind, metric, matched)`,
			`g.yaml:13:14: preset "p": unknown group or preset "defualt"`,
			`g.yaml:15:12: unknown group "nope"; valid groups: job, server, http_client, rollout, agent, model_call, verify, sandbox, concurrency, checkpoint, evaluate, model_init, load_checkpoint, step, forward_backward, optimizer, ok_group`,
			`g.yaml:17:5: a rule needs a name pattern or a kind`,
			`g.yaml:18:1: unknown key "bogus" (want groups, presets or rules)`,
		}},
		{name: "bad metric", src: "groups:\n  - name: warm\n    description: d\n    metric: \"a b\"\n", errs: []string{
			`g.yaml:4:13: metric name "a b" must not contain spaces`,
		}},
		{name: "bad kind", src: "rules:\n  - group: server\n    kind: SERVR\n", errs: []string{
			`g.yaml:3:11: kind "SERVR": want SERVER, CLIENT, INTERNAL, PRODUCER or CONSUMER`,
		}},
		{name: "invalid yaml", src: "groups: [\n", errs: []string{`g.yaml:1:1: invalid YAML: did not find expected node content`}},
		{name: "not a mapping", src: "- a\n", errs: []string{`g.yaml:1:1: a groups file is a mapping with groups, presets and rules`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reg, err := g1c().Load("g.yaml", []byte(tc.src))
			if tc.errs == nil {
				if err != nil {
					t.Fatalf("Load: %v", err)
				}
				return
			}
			var list ErrorList
			if !errors.As(err, &list) {
				t.Fatalf("Load error = %v (%T), want an ErrorList", err, err)
			}
			got := strings.Split(list.Error(), "\n")
			if strings.Join(got, "\n") != strings.Join(tc.errs, "\n") {
				t.Errorf("errors:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.errs, "\n"))
			}
			if reg != nil {
				t.Error("a failed load returned a registry")
			}
		})
	}
	// A loaded file extends a copy: presets resolve, Default is untouched.
	reg, err := g1c().Load("g.yaml", []byte(cases[0].src))
	if err != nil {
		t.Fatal(err)
	}
	s, err := reg.Parse("debug_startup")
	if err != nil || reg.Format(s) != "debug_startup" || !strings.Contains(strings.Join(reg.Names(s), ","), "startup") {
		t.Errorf("debug_startup = %v (%q), %v", reg.Names(s), reg.Format(s), err)
	}
	if _, err := g1c().Parse("startup"); err == nil {
		t.Error("g1c() learned a group from a file")
	}
	// startup takes its built-in bit; G1c's all is a fixed set, so it
	// stays out of the preset while every-group views include it.
	all, _ := reg.PresetSet("all")
	if g, ok := reg.Lookup("startup"); !ok || g != Startup || !reg.All().Has(Startup) || all.Has(Startup) {
		t.Errorf("startup = %v, %v; all = %v; every group %v", g, ok, reg.Names(all), reg.Names(reg.All()))
	}
}

func TestGroupsFileMax(t *testing.T) {
	var b strings.Builder
	b.WriteString("groups:\n")
	for i := 0; i < MaxGroups; i++ {
		b.WriteString("  - {name: g_" + strconv.Itoa(i) + ", description: d}\n")
	}
	_, err := g1c().Load("many.yaml", []byte(b.String()))
	if err == nil || !strings.Contains(err.Error(), "too many groups: at most 62") {
		t.Fatalf("err = %v, want too many groups", err)
	}
	if !strings.HasPrefix(err.Error(), "many.yaml:") {
		t.Errorf("err = %v, want a file:line position", err)
	}
}

func FuzzGroupsFile(f *testing.F) {
	f.Add([]byte("groups:\n  - name: startup\n    description: s\n    spans: gym.startup*\n"))
	f.Add([]byte("presets:\n  - name: p\n    description: d\n    groups: [default]\n"))
	f.Add([]byte("rules:\n  - group: server\n    name: \"*health\"\n"))
	f.Add([]byte("groups: [\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		reg, err := g1c().Load("f.yaml", src)
		if err != nil {
			var list ErrorList
			if !errors.As(err, &list) || len(list) == 0 {
				t.Fatalf("error %v is not a non-empty ErrorList", err)
			}
			for _, p := range list {
				if p.File != "f.yaml" || p.Line < 1 {
					t.Fatalf("problem without a position: %+v", p)
				}
			}
			return
		}
		base := len(g1c().Groups())
		if len(reg.Groups()) > MaxGroups || len(reg.Groups()) < base {
			t.Fatalf("%d groups", len(reg.Groups()))
		}
		for _, g := range reg.Groups()[base:] {
			if !snakeCase.MatchString(g.Name) || g.Description == "" {
				t.Fatalf("bad group %+v", g)
			}
		}
		// Every preset parses and formats back to itself.
		for _, p := range reg.Presets() {
			s, err := reg.Parse(p.Name)
			if err != nil {
				t.Fatalf("preset %q: %v", p.Name, err)
			}
			if back, err := reg.Parse(reg.Format(s)); err != nil || back != s {
				t.Fatalf("preset %q does not round-trip", p.Name)
			}
		}
	})
}

func TestSnippets(t *testing.T) {
	cases := []struct{ spec, yaml, env string }{
		{"default,sandbox", "telemetry:\n  enabled: true\n  span_groups: \"default,sandbox\"\n", "NEMO_GYM_OTEL_SPAN_GROUPS=default,sandbox"},
		{"server, verify", "telemetry:\n  enabled: true\n  span_groups: \"server, verify\"\n", "NEMO_GYM_OTEL_SPAN_GROUPS='server, verify'"},
		{"it's", "telemetry:\n  enabled: true\n  span_groups: \"it's\"\n", `NEMO_GYM_OTEL_SPAN_GROUPS='it'\''s'`},
	}
	for _, tc := range cases {
		if got := TelemetryYAML(tc.spec); got != tc.yaml {
			t.Errorf("TelemetryYAML(%q) = %q, want %q", tc.spec, got, tc.yaml)
		}
		if got := EnvLine(tc.spec); got != tc.env {
			t.Errorf("EnvLine(%q) = %q, want %q", tc.spec, got, tc.env)
		}
		// The YAML snippet is what FindSpec reads back.
		p := filepath.Join(t.TempDir(), "c.yaml")
		if err := os.WriteFile(p, []byte(TelemetryYAML(tc.spec)), 0o644); err != nil {
			t.Fatal(err)
		}
		if spec, _, err := FindSpec("", func(string) string { return "" }, p); err != nil || spec != tc.spec {
			t.Errorf("FindSpec(TelemetryYAML(%q)) = %q, %v", tc.spec, spec, err)
		}
	}
}

func TestSpecIsShortestEquivalent(t *testing.T) {
	reg := g1c()
	all := reg.All()
	tests := []struct {
		name string
		set  Set
		want string
	}{
		{"all", all, "all"},
		{"all without job", all.Without(Job), "per_rollout,sandbox"},
		{"per_rollout", mustParse(t, "per_rollout"), "per_rollout"},
		{"default plus one training group", mustParse(t, "default,step"), "default"},
		{"only training groups", mustParse(t, "step,optimizer"), "step,optimizer"},
		{"per_rollout without http_client", mustParse(t, "per_rollout").Without(HTTPClient), "server,rollout,agent,model_call,verify,concurrency"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := reg.Spec(tt.set)
			if got != tt.want {
				t.Fatalf("Spec(%s) = %q, want %q", reg.Format(tt.set), got, tt.want)
			}
			// Whatever it drops or adds, Gym would emit the same: only silent groups differ.
			back, err := reg.Parse(got)
			if err != nil {
				t.Fatalf("Parse(%q): %v", got, err)
			}
			if diff := (back ^ tt.set) &^ reg.silent(); diff != 0 {
				t.Fatalf("Spec(%s) = %q differs in groups that emit: %v", reg.Format(tt.set), got, reg.Names(diff))
			}
		})
	}
}
