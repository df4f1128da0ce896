package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/nemo-gym/gymtrace/internal/testfile"
)

// The real capture the token fixture is built on: Gym's own spans over
// OTLP/JSON, its truth naming every span's rollout.
const tokensBase = realGym + "s41-obs0-iso/all-otlp/"

// wantTokens is what the fixture's added spans report, per real rollout.
type wantTokens struct {
	in, out int64
	calls   int
	models  map[string]bool
}

// truthRollouts maps every span id of the real capture to its rollout
// index (-1 for run-level traffic).
func truthRollouts(t *testing.T) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, role := range []string{"driver", "agent", "model", "resources"} {
		for _, l := range testfile.Lines(t, tokensBase+"truth/"+role+".jsonl.gz") {
			var s struct {
				SpanID  string `json:"span_id"`
				Rollout *int   `json:"rollout"`
			}
			if err := json.Unmarshal(l, &s); err != nil {
				t.Fatal(err)
			}
			out[s.SpanID] = -1
			if s.Rollout != nil {
				out[s.SpanID] = *s.Rollout
			}
		}
	}
	return out
}

type otlpKV = map[string]any

func strKV(k, v string) otlpKV { return otlpKV{"key": k, "value": otlpKV{"stringValue": v}} }

// intKV is an int as OTLP/JSON sends it: a decimal string.
func intKV(k string, v int64) otlpKV {
	return otlpKV{"key": k, "value": otlpKV{"intValue": strconv.FormatInt(v, 10)}}
}

// tokenFixture writes the real capture with model backends added under
// its model server's POST /v1/responses SERVER spans, round-robin: a
// gateway's `chat` CLIENT span with vLLM's llm_request under it (both
// reporting the call), vLLM's span alone, or nothing. It returns the file
// and what each real rollout's added spans report.
func tokenFixture(t *testing.T) (string, map[int]*wantTokens) {
	t.Helper()
	lines := testfile.Lines(t, tokensBase+"otlp/traces.jsonl.gz")
	type anchor struct{ trace, span string }
	var anchors []anchor
	var modelRes any
	for _, l := range lines {
		var req struct {
			ResourceSpans []struct {
				Resource struct {
					Attributes []struct {
						Key   string `json:"key"`
						Value struct {
							S string `json:"stringValue"`
						} `json:"value"`
					} `json:"attributes"`
				} `json:"resource"`
				ScopeSpans []struct {
					Spans []struct {
						TraceID string `json:"traceId"`
						SpanID  string `json:"spanId"`
						Name    string `json:"name"`
						Kind    int    `json:"kind"`
					} `json:"spans"`
				} `json:"scopeSpans"`
			} `json:"resourceSpans"`
		}
		var raw struct {
			ResourceSpans []struct {
				Resource any `json:"resource"`
			} `json:"resourceSpans"`
		}
		if err := json.Unmarshal(l, &req); err != nil {
			t.Fatal(err)
		}
		_ = json.Unmarshal(l, &raw)
		for ri, rs := range req.ResourceSpans {
			model := false
			for _, a := range rs.Resource.Attributes {
				model = model || a.Key == "service.name" && a.Value.S == "nemo-gym/policy_model"
			}
			if !model {
				continue
			}
			modelRes = raw.ResourceSpans[ri].Resource
			for _, ss := range rs.ScopeSpans {
				for _, sp := range ss.Spans {
					if sp.Name == "POST /v1/responses" && sp.Kind == 2 {
						anchors = append(anchors, anchor{sp.TraceID, sp.SpanID})
					}
				}
			}
		}
	}
	if len(anchors) < 20 || modelRes == nil {
		t.Fatalf("%d model SERVER spans in %s", len(anchors), tokensBase)
	}
	truth := truthRollouts(t)
	want := map[int]*wantTokens{}
	var gateway, vllm []any
	span := func(trace, id, parent, name string, kind int, attrs ...otlpKV) otlpKV {
		return otlpKV{"traceId": trace, "spanId": id, "parentSpanId": parent, "name": name, "kind": kind,
			"startTimeUnixNano": "1796132691400000000", "endTimeUnixNano": "1796132691500000000", "attributes": attrs, "status": otlpKV{}}
	}
	for i, a := range anchors {
		if i%3 == 2 {
			continue
		}
		r, ok := truth[a.span]
		if !ok || r < 0 {
			t.Fatalf("model span %s: no rollout in the truth", a.span)
		}
		in, out := int64(100+7*i), int64(10+3*i)
		w := want[r]
		if w == nil {
			w = &wantTokens{models: map[string]bool{}}
			want[r] = w
		}
		w.in, w.out, w.calls = w.in+in, w.out+out, w.calls+1
		vattrs := []otlpKV{intKV("gen_ai.usage.prompt_tokens", in), intKV("gen_ai.usage.completion_tokens", out), strKV("gen_ai.request.id", fmt.Sprintf("cmpl-%d", i))}
		vid := fmt.Sprintf("7e57%012x", i)
		if i%3 == 0 {
			// The gateway names the model; vLLM's span sometimes does not,
			// and the call's model is then the gateway's.
			cid := fmt.Sprintf("ca11%012x", i)
			gateway = append(gateway, span(a.trace, cid, a.span, "chat policy", 3,
				strKV("gen_ai.operation.name", "chat"), strKV("gen_ai.provider.name", "openai"), strKV("gen_ai.request.model", "policy"),
				strKV("gen_ai.response.model", "served-a"), intKV("gen_ai.usage.input_tokens", in), intKV("gen_ai.usage.output_tokens", out)))
			if i%2 == 0 {
				vattrs = append(vattrs, strKV("gen_ai.response.model", "served-a"))
			}
			vllm = append(vllm, span(a.trace, vid, cid, "llm_request", 2, vattrs...))
			w.models["served-a"] = true
		} else {
			vllm = append(vllm, span(a.trace, vid, a.span, "llm_request", 2, append(vattrs, strKV("gen_ai.response.model", "served-b"))...))
			w.models["served-b"] = true
		}
	}
	// vLLM's export arrives before the gateway's: children before parents.
	vllmRes := otlpKV{"attributes": []otlpKV{strKV("service.name", "vllm")}}
	extra := []otlpKV{
		{"resourceSpans": []otlpKV{{"resource": vllmRes, "scopeSpans": []otlpKV{{"scope": otlpKV{"name": "vllm.llm_engine"}, "spans": vllm}}}}},
		{"resourceSpans": []otlpKV{{"resource": modelRes, "scopeSpans": []otlpKV{{"scope": otlpKV{"name": "opentelemetry.instrumentation.openai_v2"}, "spans": gateway}}}}},
	}
	var buf bytes.Buffer
	for _, l := range lines {
		buf.Write(l)
		buf.WriteByte('\n')
	}
	for _, e := range extra {
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	path := filepath.Join(t.TempDir(), "traces.jsonl")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, want
}

// rolloutOfID is the real rollout a structural rollout id names: a
// synthetic id holds the span id of the rollout's first span.
func rolloutOfID(t *testing.T, truth map[string]int, id string) int {
	t.Helper()
	_, span, ok := strings.Cut(id, "/")
	r, found := truth[span]
	if !ok || !found {
		t.Fatalf("rollout id %q names no span of the truth", id)
	}
	return r
}

func checkTokens(t *testing.T, where string, got *tokensJSON, w *wantTokens) {
	t.Helper()
	if w == nil {
		if got != nil {
			t.Errorf("%s: tokens %+v where no span reports any", where, *got)
		}
		return
	}
	if got == nil {
		t.Errorf("%s: no tokens, want %d in, %d out", where, w.in, w.out)
		return
	}
	var models []string
	for m := range w.models {
		models = append(models, m)
	}
	sort.Strings(models)
	if got.Input != w.in || got.Output != w.out || got.Calls != w.calls || strings.Join(got.Models, ",") != strings.Join(models, ",") {
		t.Errorf("%s: %d in, %d out, %d calls, models %v; want %d, %d, %d, %v", where, got.Input, got.Output, got.Calls, got.Models, w.in, w.out, w.calls, models)
	}
}

// TestTokensRealGym: token usage added under a real Gym capture's model
// calls is summed per rollout exactly, a gateway's span and the vLLM span
// under it counted once, and rollouts without any carry no tokens key.
func TestTokensRealGym(t *testing.T) {
	path, want := tokenFixture(t)
	truth := truthRollouts(t)
	var total wantTokens
	total.models = map[string]bool{}
	for _, w := range want {
		total.in, total.out, total.calls = total.in+w.in, total.out+w.out, total.calls+w.calls
		for m := range w.models {
			total.models[m] = true
		}
	}
	if len(want) < 5 {
		t.Fatalf("the fixture reaches %d rollouts", len(want))
	}

	var stdout, stderr bytes.Buffer
	if code := runCheck([]string{"--json", path}, &stdout, &stderr); code != exitOK {
		t.Fatalf("check exit %d: %s", code, stderr.String())
	}
	var chk checkJSON
	if err := json.Unmarshal(stdout.Bytes(), &chk); err != nil {
		t.Fatal(err)
	}
	if chk.Rollouts != 20 || chk.Tokens == nil {
		t.Fatalf("check: %d rollouts, tokens %v", chk.Rollouts, chk.Tokens)
	}
	checkTokens(t, "check total", &chk.Tokens.Tokens, &total)
	if chk.Tokens.Rollouts != len(want) || chk.Tokens.OutsideRollouts != nil {
		t.Errorf("check: tokens in %d rollouts (want %d), outside %v", chk.Tokens.Rollouts, len(want), chk.Tokens.OutsideRollouts)
	}
	seen := map[int]bool{}
	for id, got := range chk.RolloutTokens {
		r := rolloutOfID(t, truth, id)
		seen[r] = true
		checkTokens(t, "check rollout "+id, got, want[r])
	}
	for r, w := range want {
		if !seen[r] {
			t.Errorf("check: rollout %d has no tokens, want %d in", r, w.in)
		}
	}

	stdout.Reset()
	if code := runPreview([]string{"--spec", "per_rollout", "--json", path}, &stdout, &stderr); code != exitOK {
		t.Fatalf("preview exit %d: %s", code, stderr.String())
	}
	var pre previewJSON
	if err := json.Unmarshal(stdout.Bytes(), &pre); err != nil {
		t.Fatal(err)
	}
	if pre.Tokens == nil || len(pre.PerRollout) != 20 {
		t.Fatalf("preview: tokens %v, %d rollouts", pre.Tokens, len(pre.PerRollout))
	}
	checkTokens(t, "preview total", &pre.Tokens.Tokens, &total)
	for _, r := range pre.PerRollout {
		checkTokens(t, "preview rollout "+r.RolloutID, r.Tokens, want[rolloutOfID(t, truth, r.RolloutID)])
	}

	stdout.Reset()
	if code := runCheck([]string{path}, &stdout, &stderr); code != exitOK {
		t.Fatalf("check exit %d: %s", code, stderr.String())
	}
	line := fmt.Sprintf("tokens: %d in, %d out over %d model calls in %d rollouts (served-a, served-b)\n", total.in, total.out, total.calls, len(want))
	if !strings.Contains(stdout.String(), line) {
		t.Errorf("check text lacks %q:\n%s", line, stdout.String())
	}
}

// TestTokensAbsent: a capture of Gym alone reports no tokens, so neither
// JSON has the keys and the text reports no line.
func TestTokensAbsent(t *testing.T) {
	for _, args := range [][]string{{"check", "--json"}, {"check"}, {"preview", "--spec", "all", "--json"}, {"preview", "--spec", "all"}} {
		var stdout, stderr bytes.Buffer
		files := realGymCase(t, "s41-obs0-iso/all")
		run := runCheck
		if args[0] == "preview" {
			run = runPreview
		}
		run(append(args[1:], files...), &stdout, &stderr)
		if s := stdout.String(); strings.Contains(s, "tokens") || s == "" {
			t.Errorf("%v: tokens in the output (or none at all): %.200s", args, s)
		}
	}
}
