package filter

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/nemo-gym/gymtrace/gate/internal/testfleet"
	"github.com/nemo-gym/gymtrace/model"
)

func TestFilterOperators(t *testing.T) {
	snap := testfleet.Capture(t, testfleet.ThreeRollouts)
	if len(snap.Rollouts) != 3 {
		t.Fatalf("capture has %d rollouts, want 3", len(snap.Rollouts))
	}
	tests := []struct {
		name, filter string
		want         []string
	}{
		{"empty", "", []string{"a", "b", "c"}},
		{"bare word: span name", "verify", []string{"c"}},
		{"bare word: service", "EXAMPLE_TOOLS", []string{"b", "c"}},
		{"bare word: rollout id", "b", []string{"b"}},
		{"bare word: error", "error", []string{"b", "c"}},
		{"key=value", "gen.model=tiny-1", []string{"a", "c"}},
		{"= ignores case", "gen.model=big-model-7", []string{"b"}},
		{"key~substring", "gen.model~model", []string{"b"}},
		{"key!=value", "gen.model!=tiny-1", []string{"a", "b", "c"}}, // spans without it differ
		{"key!~text on a kind of span", "kind=internal gen.model!~tiny", []string{"a", "b", "c"}},
		{"resource attribute", "nemo.gym.service_group=nemo-gym", []string{"a", "b", "c"}},
		{"numeric >=", "http.status_code>=500", []string{"b"}},
		{"numeric <", "http.status_code<300", []string{"a", "b", "c"}},
		{"numeric > nothing", "http.status_code>500", nil},
		{"status=error", "status=error", []string{"b", "c"}},
		{"status=ok", "status=ok", []string{"c"}},
		{"status!=unset", "status!=unset", []string{"b", "c"}},
		{"service full", "service=nemo-gym/policy_model", []string{"a", "b", "c"}},
		{"service short", "service=example_tools", []string{"b", "c"}},
		{"service~", "service~tools", []string{"b", "c"}},
		{"name=quoted", `name="POST /get_weather"`, []string{"b"}},
		{"name~", "name~weather", []string{"b"}},
		{"kind=server", "kind=server service=example_tools", []string{"b"}},
		{"dur>", "dur>1s", []string{"b"}},
		{"dur>=", "dur>=900ms", []string{"a", "b"}},
		{"dur<", "dur<25ms", []string{"c"}},
		{"dur<=", "dur<=20ms", []string{"c"}},
		{"dur=", "dur=40ms", []string{"a"}},
		{"dur!=", "name=gym.rollout dur!=850ms", []string{"b"}},
		{"same span: slow model", "service=policy_model dur>1s", []string{"b"}},
		{"same span: no match across spans", "status=error dur>1s", nil},
		{"rdur>", "rdur>2s", []string{"b"}},
		{"rdur<=", "rdur<=900ms", []string{"a", "c"}},
		{"rdur=", "rdur=500ms", []string{"c"}},
		{"-rdur", "-rdur>1s", []string{"a", "c"}},
		// The rollout's duration, not one span's: with a span term it
		// holds beside it, where dur must hold on the same span.
		{"rdur and a span term", "rdur>1s status=error", []string{"b"}},
		{"id=", "id=c", []string{"c"}},
		{"id~", "rollout~b", []string{"b"}},
		{"id!=", "id!=a", []string{"b", "c"}},
		{"-term: no span matches", "-status=error", []string{"a"}},
		{"-word", "-verify", []string{"a", "b"}},
		{"and of rollout and span terms", "-id=b service=policy_model", []string{"a", "c"}},
		{"trace id", "trace~00000003", []string{"c"}},
		{"value with operators", "url.full~verify?x=1", []string{"c"}},
		{"unknown attribute", "no.such=1", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Parse(tt.filter)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.filter, err)
			}
			var got []string
			for _, r := range f.Rollouts(snap) {
				got = append(got, r.ID)
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("filter %q matches %v, want %v", tt.filter, got, tt.want)
			}
		})
	}
}

func TestFilterErrors(t *testing.T) {
	tests := []struct {
		filter, want string
	}{
		{"dur>fast", `filter term "dur>fast" (column 1): bad duration "fast" (want e.g. 100ms, 1.5s, 2m)`},
		{"ok dur~1s", `filter term "dur~1s" (column 4): dur takes >, >=, <, <=, = or !=, not ~`},
		{"rdur~2s", `filter term "rdur~2s" (column 1): rdur takes >, >=, <, <=, = or !=, not ~`},
		{"rdur>long", `filter term "rdur>long" (column 1): bad duration "long" (want e.g. 100ms, 1.5s, 2m)`},
		{"status=broken", `filter term "status=broken" (column 1): unknown status "broken" (want error, ok or unset)`},
		{"kind=rpc", `filter term "kind=rpc" (column 1): unknown kind "rpc" (want server, client, internal, producer, consumer or unspecified)`},
		{"=x", `filter term "=x" (column 1): no key before the operator (want key=value, key~text, dur>100ms, ...)`},
		{"http.status_code>5xx", `filter term "http.status_code>5xx" (column 1): > compares numbers: "5xx" is not a number`},
		{"name>a", `filter term "name>a" (column 1): > compares numbers or durations, not name (want =, !=, ~ or !~)`},
		{`name="POST /run`, `filter term "name=\"POST /run" (column 1): unclosed quote`},
	}
	for _, tt := range tests {
		_, err := Parse(tt.filter)
		var fe *Error
		if !errors.As(err, &fe) {
			t.Errorf("Parse(%q) = %v, want a *Error", tt.filter, err)
			continue
		}
		if err.Error() != tt.want {
			t.Errorf("Parse(%q):\n got %s\nwant %s", tt.filter, err, tt.want)
		}
	}
}

func TestFilterSplit(t *testing.T) {
	toks, err := splitTerms(`  a  name="x y" "q\"z"  -b `)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tk := range toks {
		got = append(got, tk.text)
	}
	if want := []string{"a", "name=x y", `q"z`, "-b"}; !slices.Equal(got, want) {
		t.Errorf("splitTerms = %q, want %q", got, want)
	}
	if f := MustParse(` "a=b" `); f.pos[0].field != fieldWord || f.pos[0].key != "a=b" {
		t.Errorf("a quoted operator is part of a bare word, got %+v", f.pos[0])
	}
	if s := MustParse("  x  ").String(); s != "x" {
		t.Errorf("String() = %q", s)
	}
	if !strings.Contains(Help, "dur>100ms") {
		t.Error("Help lacks the duration example")
	}
}

// TestHitSpan reads a filter as a search inside one rollout: every term on
// the one span, words through the caller's text search.
func TestHitSpan(t *testing.T) {
	snap := testfleet.Capture(t, testfleet.ThreeRollouts)
	var b *model.Rollout
	for _, r := range snap.Rollouts {
		if r.ID == "b" {
			b = r
		}
	}
	if b == nil {
		t.Fatal("no rollout b")
	}
	tests := []struct{ filter, want string }{
		{"status=error", "POST /get_weather"},
		{"http.status_code>=500", "POST /get_weather"},
		{"error", "POST /get_weather"},
		{"dur>1s kind=internal", "gym.model.responses,gym.rollout"},
		{"weather", "POST /get_weather"},
		{"-kind=internal kind!=client", "POST /get_weather,POST /run"},
		{"status=error model", ""},
	}
	for _, tt := range tests {
		f, err := Parse(tt.filter)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tt.filter, err)
		}
		var got []string
		for _, fr := range b.Fragments {
			for i := range fr.Spans {
				sp := &fr.Spans[i]
				name := snap.Str(sp.Name)
				if f.HitSpan(snap, fr.TraceID, sp, func(w string) bool { return strings.Contains(strings.ToLower(name), w) }) {
					got = append(got, name)
				}
			}
		}
		slices.Sort(got)
		if g := strings.Join(got, ","); g != tt.want {
			t.Errorf("HitSpan(%q) hits %q, want %q", tt.filter, g, tt.want)
		}
	}
}
