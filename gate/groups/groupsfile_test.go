package groups

import (
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// sections keeps the three lists by key, drops a null one, and reports a
// list that is not one and a key that is none of them.
func TestLoaderSections(t *testing.T) {
	src := "groups:\npresets: 3\nrules:\n  - group: server\n    kind: SERVER\nextra: 1\n"
	root, err := parseYAML("g.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	l := newLoader("g.yaml", g1c().clone())
	got := l.sections(root)
	if len(got) != 1 || got["rules"] == nil || got["rules"].Kind != yaml.SequenceNode {
		t.Errorf("sections(%q) = %v, want the rules list alone", src, got)
	}
	want := []string{
		`g.yaml:2:10: presets must be a list`,
		`g.yaml:6:1: unknown key "extra" (want groups, presets or rules)`,
	}
	if l.errs.Error() != strings.Join(want, "\n") {
		t.Errorf("sections(%q) problems:\n%v\nwant\n%s", src, l.errs, strings.Join(want, "\n"))
	}
}

// A file's rules, its groups' span patterns first, go after the
// registry's attribute rule and before its name rules, so a file can
// reclassify a built-in name while an emitter's attribute still wins.
func TestLoaderRuleOrder(t *testing.T) {
	src := `
rules:
  - group: server
    name: "gym.rollout"
groups:
  - name: warm
    description: d
    spans: ["warm*", "*_warm"]
`
	base := g1c()
	reg, err := base.Load("g.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	warm, _ := reg.Lookup("warm")
	rules := reg.Rules()
	if rules[0].Attr == "" {
		t.Fatalf("rule 0 = %v, want the attribute rule", rules[0])
	}
	want := []Rule{{Group: warm, Prefix: "warm"}, {Group: warm, Suffix: "_warm"}, {Group: Server, Name: "gym.rollout"}}
	for i, w := range want {
		if got := rules[1+i]; got != w {
			t.Errorf("rule %d = %+v, want %+v", 1+i, got, w)
		}
	}
	if got, w := len(rules), len(base.Rules())+3; got != w {
		t.Errorf("%d rules, want %d", got, w)
	}
	if got := reg.Rules()[4]; got != base.Rules()[1] {
		t.Errorf("rule 4 = %+v, want the registry's first name rule %+v", got, base.Rules()[1])
	}
}
