package main

import (
	"bytes"
	"encoding/json"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

func diffCmd(args []string, o, e *bytes.Buffer) int { return runDiff(args, o, e) }

func runDiffJSON(t *testing.T, args ...string) diffJSON {
	t.Helper()
	code, out, errOut := runGateCmd(t, diffCmd, append([]string{"--json"}, args...)...)
	if code != exitOK {
		t.Fatalf("diff %q: exit %d: %s", args, code, errOut)
	}
	var d diffJSON
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatal(err)
	}
	return d
}

func spanNames(ss []diffSpanJSON) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Name)
	}
	sort.Strings(out)
	return out
}

func emptyDiff(d diffJSON) bool {
	return len(d.OnlyA)+len(d.OnlyB)+len(d.Moved)+len(d.Changed)+len(d.ErrorsOnlyA)+len(d.ErrorsOnlyB) == 0 && d.FirstDivergence == nil
}

// Every rollout against itself is empty, in the same capture and against
// the same spans read from another format.
func TestDiffSelf(t *testing.T) {
	console, otlp := gateCaptures+"all.console.jsonl", gateCaptures+"all.otlp.jsonl"
	for _, id := range []string{"s3-r0000", "s3-r0001", "s3-r0002", "s3-r0003", "s3-r0004", "s3-r0005"} {
		if d := runDiffJSON(t, id, id, console); !emptyDiff(d) || len(d.Operations) == 0 {
			t.Errorf("%s against itself: %+v", id, d)
		}
		if d := runDiffJSON(t, id, id, console, "--b-from", otlp); !emptyDiff(d) {
			t.Errorf("%s against its OTLP copy: %+v", id, d)
		}
		if d := runDiffJSON(t, "--a-spec", "per_rollout", "--b-spec", "per_rollout", id, id, console); !emptyDiff(d) {
			t.Errorf("%s against itself under per_rollout: %+v", id, d)
		}
	}
	d := runDiffJSON(t, "s3-r0001", "s3-r0001", console)
	for _, l := range [][]diffSpanJSON{d.OnlyA, d.OnlyB, d.ErrorsOnlyA, d.ErrorsOnlyB} {
		if l == nil {
			t.Error("a list is null, want []")
		}
	}
}

// Two rollouts of the fixture, whose README gives their shapes: s3-r0002
// has 2 model turns and get_weather answered 503 once then retried;
// s3-r0004 has 3 model turns and calls search_web, run_code (starting the
// sandbox) and get_weather.
func TestDiffFixtureRollouts(t *testing.T) {
	d := runDiffJSON(t, "s3-r0002", "s3-r0004", gateCaptures+"all.console.jsonl")
	call := func(route string) []string { // a call: CLIENT, SERVER, receive, two sends
		return []string{"HTTP POST", "POST " + route, "POST " + route + " http receive", "POST " + route + " http send", "POST " + route + " http send"}
	}
	sorted := func(xs ...[]string) []string {
		var out []string
		for _, x := range xs {
			out = append(out, x...)
		}
		sort.Strings(out)
		return out
	}
	// A: the retried get_weather call.
	if got, want := spanNames(d.OnlyA), sorted(call("/get_weather")); !slices.Equal(got, want) {
		t.Errorf("only_a %v, want %v", got, want)
	}
	// B: a third model turn, search_web, run_code with the sandbox.
	want := sorted(call("/v1/responses"), []string{"gym.model.responses"}, call("/search_web"), call("/run_code"), []string{"gym.sandbox.start", "gym.sandbox.exec"})
	if got := spanNames(d.OnlyB); !slices.Equal(got, want) {
		t.Errorf("only_b %v, want %v", got, want)
	}
	// The 503: the agent's CLIENT span, the tool's SERVER span and its
	// response-start send span are ERROR, in A only.
	if got, want := spanNames(d.ErrorsOnlyA), []string{"HTTP POST", "POST /get_weather", "POST /get_weather http send"}; !slices.Equal(got, want) || len(d.ErrorsOnlyB) != 0 {
		t.Errorf("errors_only_a %v errors_only_b %v, want %v and none", got, spanNames(d.ErrorsOnlyB), want)
	}
	if d.A.Spans+len(d.OnlyB)-len(d.OnlyA) != d.B.Spans {
		t.Errorf("A %d spans, only_a %d, only_b %d, B %d spans", d.A.Spans, len(d.OnlyA), len(d.OnlyB), d.B.Spans)
	}
	if dv := d.FirstDivergence; dv == nil || dv.A != "HTTP POST → POST /get_weather" || dv.B != "HTTP POST → POST /search_web" {
		t.Errorf("first divergence %+v", dv)
	}
}

// One rollout under the previewed spec against itself as captured: what
// the spec drops is only in B.
func TestDiffUnderSpec(t *testing.T) {
	d := runDiffJSON(t, "--a-spec", "per_rollout", "s3-r0000", "s3-r0000", gateCaptures+"all.console.jsonl")
	if got, want := spanNames(d.OnlyB), []string{"gym.sandbox.exec", "gym.sandbox.exec", "gym.sandbox.start"}; !slices.Equal(got, want) || len(d.OnlyA) != 0 {
		t.Errorf("only_a %v only_b %v, want the sandbox spans per_rollout drops in B", spanNames(d.OnlyA), got)
	}
	if got := spanNames(d.ErrorsOnlyB); !slices.Equal(got, []string{"gym.sandbox.exec"}) {
		t.Errorf("errors_only_b %v, want the failing gym.sandbox.exec", got)
	}
	if d.A.Spec != "per_rollout" || d.B.Spec != "" {
		t.Errorf("sides' specs %q / %q", d.A.Spec, d.B.Spec)
	}
}

// A real Gym rollout under default against itself as captured (every
// group on): the spans are matched by id, so only what the spec drops is
// "only" on a side, and the spans it moves under a new parent are listed
// as moved, never as one span on each side.
func TestDiffSpecMatchesByID(t *testing.T) {
	files := realGymCase(t, "s41-obs1-iso/all")
	d := runDiffJSON(t, append([]string{"--a-spec", "default", "3-0", "3-0"}, files...)...)
	if len(d.OnlyA) != 0 || len(d.OnlyB) != d.B.Spans-d.A.Spans || len(d.OnlyB) == 0 {
		t.Errorf("A %d spans, B %d: only_a %d, only_b %d; want only_b = B − A", d.A.Spans, d.B.Spans, len(d.OnlyA), len(d.OnlyB))
	}
	ids := map[string]bool{}
	for _, s := range d.OnlyB {
		ids[s.SpanID] = true
	}
	if len(d.Moved) == 0 {
		t.Fatal("no span moved, want the agent's calls under gym.agent.responses in B")
	}
	for _, mv := range d.Moved {
		if ids[mv.SpanID] || slices.Equal(mv.PathA, mv.PathB) {
			t.Errorf("moved %s %s: paths %v → %v", mv.Name, mv.SpanID, mv.PathA, mv.PathB)
		}
		if got := mv.PathB[len(mv.PathB)-1]; !ids[spanIDByName(d.OnlyB, got)] {
			t.Errorf("moved %s under %s in B, which is not a span only B has", mv.SpanID, got)
		}
	}
	_, out, _ := runGateCmd(t, diffCmd, append([]string{"--a-spec", "default", "3-0", "3-0"}, files...)...)
	if !strings.Contains(out, "only in B (7)") || strings.Contains(out, "only in A") || !strings.Contains(out, "moved (") {
		t.Errorf("diff text:\n%s", out)
	}
}

func spanIDByName(ss []diffSpanJSON, name string) string {
	for _, s := range ss {
		if s.Name == name {
			return s.SpanID
		}
	}
	return ""
}

func TestDiffUsage(t *testing.T) {
	c := gateCaptures + "all.console.jsonl"
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"s3-r0000", c}, "want ROLLOUT_A ROLLOUT_B and at least one capture file"},
		{[]string{"s3-r0000", "nope", c}, `rollout B "nope": no such rollout among 6; nearest s3-r0000, s3-r0001, s3-r0002`},
		{[]string{"s3-r0000", "s3-r", c}, `rollout B "s3-r" names 6 rollouts: s3-r0000, s3-r0001,`},
		{[]string{"--a-spec", "bogus", "s3-r0000", "s3-r0000", c}, "--a-spec: "},
		{[]string{"s3-r0000", "s3-r0000", c, "--b-from", "/no/such/file"}, "--b-from: "},
	}
	for _, tt := range tests {
		code, _, errOut := runGateCmd(t, diffCmd, tt.args...)
		if code != exitUsage || !strings.Contains(errOut, tt.want) {
			t.Errorf("diff %q: exit %d, stderr %q; want exit 2 and %q", tt.args, code, errOut, tt.want)
		}
	}
	code, out, _ := runGateCmd(t, diffCmd, "s3-r0002", "s3-r0002", c)
	if code != exitOK || !strings.Contains(out, "same spans, same tree, same errors") {
		t.Errorf("text diff of a rollout with itself: exit %d\n%s", code, out)
	}
	// One trace is one trace, not "1 traces".
	if !regexp.MustCompile(`(?m)^A s3-r0002: \d+ spans, \d+ errors?, 1 trace, `).MatchString(out) {
		t.Errorf("text diff's counts read wrong:\n%s", out)
	}
}
