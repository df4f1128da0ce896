package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/nemo-gym/gymtrace/model"
	"github.com/nemo-gym/gymtrace/receiver"

	"github.com/nemo-gym/gymtrace/internal/testfile"
)

// sharedRealGym holds the shared captures of Gym's real telemetry code.
const sharedRealGym = "../../testdata/real-gym/"

// capSpan is a span as both capture formats give it, attribute keys in order.
type capSpan struct {
	service, kind, name string
	id, parent, traceID string
	status              string
	keys, resKeys       []string
	attrs               map[string]any
	events              int
}

// TestDemoRecordLooksLikeRealGym records demo runs with --record and
// compares them with captures of Gym's real telemetry code under the same
// settings: the span types (process × kind × name pattern) and the
// attribute keys of each, the resource keys in order, the ASGI children of
// every request span by method and status, one CLIENT span per request,
// and the run-level traces (one health probe per server, /aggregate_metrics).
func TestDemoRecordLooksLikeRealGym(t *testing.T) {
	tests := []struct {
		name, fixture string
		args          []string
	}{
		{"all", "s41-obs0-iso/all", []string{"--spec", "all"}},
		{"observability", "s41-obs1-iso/all", []string{"--spec", "all", "--observability"}},
		{"aiohttp", "s41-obs0-iso/aiohttp-all", []string{"--spec", "all", "--aiohttp"}},
		{"standalone", "s41-obs0-iso/standalone-default", []string{"--spec", "default", "--standalone"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := filepath.Join(t.TempDir(), "demo.jsonl")
			args := append(append([]string(nil), demoArgs...), "--headless", "--rollouts", "20", "--concurrency", "4", "--seed", "41", "--record", rec)
			var stdout, stderr bytes.Buffer
			if code := runDemo(context.Background(), append(args, tt.args...), &stdout, &stderr, false); code != exitOK {
				t.Fatalf("demo exit %d:\n%s", code, stderr.String())
			}
			sim := readRecord(t, rec)
			real := readConsoleDir(t, sharedRealGym+tt.fixture+"/console")
			if len(sim) == 0 || len(real) == 0 {
				t.Fatalf("%d recorded spans, %d real", len(sim), len(real))
			}
			t.Logf("%d spans recorded, %d in %s; request shapes %q", len(sim), len(real), tt.fixture, shapeFacts(sim))
			compareCaptures(t, real, sim)
			// The record reopens as serve's does: every span, every metric
			// point, no bad line.
			st := model.NewStore(model.Options{})
			defer st.Close()
			rep, err := receiver.ReadFiles(st, []string{rec}, receiver.ReadOptions{})
			if err != nil || rep.Spans != len(sim) || rep.BadLines != 0 || rep.MetricPoints == 0 {
				t.Errorf("reopening the record: %d spans of %d, %d bad lines, %d metric points, err %v", rep.Spans, len(sim), rep.BadLines, rep.MetricPoints, err)
			}
		})
	}
}

var rolloutPrefix = regexp.MustCompile(`/ng-rollout/[^/ ]+/`)

// spanType is process × kind × name, with rollout ids in names masked.
func spanType(s *capSpan) string {
	return s.service + " " + s.kind + " " + rolloutPrefix.ReplaceAllString(s.name, "/ng-rollout/ID/")
}

func compareCaptures(t *testing.T, real, sim []*capSpan) {
	t.Helper()
	keySets := func(spans []*capSpan) map[string][]string {
		out := map[string][]string{}
		for _, s := range spans {
			k := strings.Join(s.keys, ",")
			if ty := spanType(s); !slices.Contains(out[ty], k) {
				out[ty] = append(out[ty], k)
			}
		}
		for _, v := range out {
			sort.Strings(v)
		}
		return out
	}
	rk, sk := keySets(real), keySets(sim)
	for ty, want := range rk {
		if got, ok := sk[ty]; !ok {
			t.Errorf("span type %q: in the real capture, not in the demo's", ty)
		} else if !slices.Equal(got, want) {
			t.Errorf("span type %q: attribute keys\n  demo %q\n  real %q", ty, got, want)
		}
	}
	for ty := range sk {
		if _, ok := rk[ty]; !ok {
			t.Errorf("span type %q: in the demo's capture, never in Gym's", ty)
		}
	}
	resKeys := func(spans []*capSpan) []string {
		seen := map[string]bool{}
		var out []string
		for _, s := range spans {
			k := strings.Join(s.resKeys, ",")
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
		return out
	}
	if got, want := resKeys(sim), resKeys(real); !slices.Equal(got, want) {
		t.Errorf("resource keys\n  demo %q\n  real %q", got, want)
	}
	if got, want := shapeFacts(sim), shapeFacts(real); !slices.Equal(got, want) {
		t.Errorf("request shapes\n  demo %q\n  real %q", got, want)
	}
}

// shapeFacts lists, as sorted distinct facts: the ASGI children of each
// request span by method and status, the children of each CLIENT span, the
// health probes and /aggregate_metrics spans per process, gym.job.
func shapeFacts(spans []*capSpan) []string {
	kids := map[string][]*capSpan{}
	byID := map[string]*capSpan{}
	for _, s := range spans {
		kids[s.parent] = append(kids[s.parent], s)
		byID[s.id] = s
	}
	facts := map[string]bool{}
	count := map[string]int{}
	for _, s := range spans {
		isASGI := strings.HasSuffix(s.name, " http send") || strings.HasSuffix(s.name, " http receive")
		if _, isServer := s.attrs["http.server_name"]; isServer && !isASGI {
			rcv, snd := 0, 0
			for _, k := range kids[s.id] {
				if strings.HasSuffix(k.name, " http receive") {
					rcv++
				} else if strings.HasSuffix(k.name, " http send") {
					snd++
				}
			}
			facts[fmt.Sprintf("%s %v %v: %d receive + %d send", s.kind, s.attrs["http.method"], s.attrs["http.status_code"], rcv, snd)] = true
			if p := byID[s.parent]; s.parent == "" || p == nil {
				count[s.service+" root "+s.name]++
			}
			if strings.HasSuffix(s.name, "/aggregate_metrics") {
				count[s.service+" "+s.name]++
			}
		}
		if s.kind == "CLIENT" {
			facts[fmt.Sprintf("CLIENT %s: %d children", s.name, len(kids[s.id]))] = true
		}
		if s.name == "gym.job" {
			count["gym.job, root "+fmt.Sprint(s.parent == "")]++
		}
	}
	for k, n := range count {
		if strings.Contains(k, " root ") && !strings.HasSuffix(k, " GET /") {
			continue // roots of /run in a standalone run: one per rollout
		}
		facts[fmt.Sprintf("%s ×%d", k, n)] = true
	}
	out := make([]string, 0, len(facts))
	for f := range facts {
		out = append(out, f)
	}
	sort.Strings(out)
	return out
}

// readRecord reads --record's OTLP/JSON lines.
func readRecord(t *testing.T, path string) []*capSpan {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type kv struct {
		Key   string                     `json:"key"`
		Value map[string]json.RawMessage `json:"value"`
	}
	var out []*capSpan
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	kinds := map[int]string{1: "INTERNAL", 2: "SERVER", 3: "CLIENT"}
	for sc.Scan() {
		var req struct {
			ResourceSpans []struct {
				Resource struct {
					Attributes []kv `json:"attributes"`
				} `json:"resource"`
				ScopeSpans []struct {
					Spans []struct {
						TraceID    string `json:"traceId"`
						SpanID     string `json:"spanId"`
						Parent     string `json:"parentSpanId"`
						Name       string `json:"name"`
						Kind       int    `json:"kind"`
						Attributes []kv   `json:"attributes"`
						Events     []any  `json:"events"`
						Status     struct {
							Code int `json:"code"`
						} `json:"status"`
					} `json:"spans"`
				} `json:"scopeSpans"`
			} `json:"resourceSpans"`
		}
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for _, rs := range req.ResourceSpans {
			var resKeys []string
			service := ""
			for _, a := range rs.Resource.Attributes {
				resKeys = append(resKeys, a.Key)
				if a.Key == "service.name" {
					_ = json.Unmarshal(a.Value["stringValue"], &service)
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, sp := range ss.Spans {
					s := &capSpan{service: service, kind: kinds[sp.Kind], name: sp.Name, id: sp.SpanID, parent: sp.Parent,
						traceID: sp.TraceID, resKeys: resKeys, attrs: map[string]any{}, events: len(sp.Events)}
					s.status = []string{"UNSET", "OK", "ERROR"}[sp.Status.Code]
					for _, a := range sp.Attributes {
						s.keys = append(s.keys, a.Key)
						s.attrs[a.Key] = otlpValue(a.Value)
					}
					out = append(out, s)
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// otlpValue decodes an OTLP/JSON AnyValue, int64 written as a string.
func otlpValue(v map[string]json.RawMessage) any {
	var out any
	for kind, raw := range v {
		switch kind {
		case "intValue":
			var n json.Number
			_ = json.Unmarshal(raw, &n)
			out, _ = n.Float64()
		default:
			_ = json.Unmarshal(raw, &out)
		}
	}
	return out
}

// readConsoleDir reads every console log of a real capture.
func readConsoleDir(t *testing.T, dir string) []*capSpan {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.log.gz"))
	var out []*capSpan
	for _, name := range files {
		for _, line := range testfile.Lines(t, name) {
			if !bytes.HasPrefix(line, []byte(`{"name"`)) {
				continue // metric and log records, plain output
			}
			out = append(out, consoleSpan(t, line))
		}
	}
	return out
}

func consoleSpan(t *testing.T, line []byte) *capSpan {
	t.Helper()
	var sp struct {
		Name    string `json:"name"`
		Context struct {
			TraceID string `json:"trace_id"`
			SpanID  string `json:"span_id"`
		} `json:"context"`
		Kind     string  `json:"kind"`
		ParentID *string `json:"parent_id"`
		Status   struct {
			Code string `json:"status_code"`
		} `json:"status"`
		Attrs    json.RawMessage `json:"attributes"`
		Events   []any           `json:"events"`
		Resource struct {
			Attributes json.RawMessage `json:"attributes"`
		} `json:"resource"`
	}
	if err := json.Unmarshal(line, &sp); err != nil {
		t.Fatal(err)
	}
	s := &capSpan{kind: strings.TrimPrefix(sp.Kind, "SpanKind."), name: sp.Name, id: strings.TrimPrefix(sp.Context.SpanID, "0x"),
		traceID: strings.TrimPrefix(sp.Context.TraceID, "0x"), status: sp.Status.Code, events: len(sp.Events)}
	if sp.ParentID != nil {
		s.parent = strings.TrimPrefix(*sp.ParentID, "0x")
	}
	s.keys = orderedKeys(t, sp.Attrs)
	s.resKeys = orderedKeys(t, sp.Resource.Attributes)
	_ = json.Unmarshal(sp.Attrs, &s.attrs)
	var res map[string]any
	_ = json.Unmarshal(sp.Resource.Attributes, &res)
	s.service = fmt.Sprint(res["service.name"])
	return s
}

// orderedKeys returns the keys of a JSON object in document order.
func orderedKeys(t *testing.T, obj json.RawMessage) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(obj))
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	var out []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return out
}
