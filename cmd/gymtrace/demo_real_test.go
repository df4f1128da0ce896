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
// attribute keys of each, the resource keys of each process in order, the
// ASGI children of every request span by method and status, one CLIENT
// span per request, the run-level traces (one health probe per server,
// /aggregate_metrics), the start-up trace's parent links, and the metrics
// of each process (scope, name, type, unit, description, attribute keys).
func TestDemoRecordLooksLikeRealGym(t *testing.T) {
	tests := []struct {
		name, fixture string
		args          []string
		// metrics: compare the metrics too (the G1 fleet does not yet
		// simulate the aiohttp client's metric nor the observability
		// run's unrouted request attributes).
		metrics bool
	}{
		{"all", "s41-obs0-iso/all", []string{"--spec", "all"}, true},
		{"observability", "s41-obs1-iso/all", []string{"--spec", "all", "--observability"}, false},
		{"aiohttp", "s41-obs0-iso/aiohttp-all", []string{"--spec", "all", "--aiohttp"}, false},
		{"standalone", "s41-obs0-iso/standalone-default", []string{"--spec", "default", "--standalone"}, false},
		{"G3", "s52-g3-obs0-iso/all", []string{"--spec", "all", "--gym-variant", "G3", "--seed", "52"}, true},
		// Many disconnect races: their shape undone is the shape of a
		// request without one.
		{"G3 races", "s52-g3-obs0-iso/all", []string{"--spec", "all", "--gym-variant", "G3", "--seed", "52", "--disconnect-race", "0.3"}, true},
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
			simU, simRaced := unraceDisconnects(sim)
			realU, realRaced := unraceDisconnects(real)
			t.Logf("%d spans recorded, %d in %s; disconnect races %d (real %d); request shapes %q", len(sim), len(real), tt.fixture, simRaced, realRaced, shapeFacts(simU))
			compareCaptures(t, realU, simU)
			if tt.metrics {
				compareMetrics(t, readConsoleMetrics(t, sharedRealGym+tt.fixture+"/console"), readRecordMetrics(t, rec))
			}
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
	// Resource keys per process, in order.
	resKeys := func(spans []*capSpan) map[string][]string {
		out := map[string][]string{}
		for _, s := range spans {
			if k := strings.Join(s.resKeys, ","); !slices.Contains(out[s.service], k) {
				out[s.service] = append(out[s.service], k)
			}
		}
		return out
	}
	sr, rr := resKeys(sim), resKeys(real)
	for svc, want := range rr {
		if got := sr[svc]; !slices.Equal(got, want) {
			t.Errorf("%s: resource keys\n  demo %q\n  real %q", svc, got, want)
		}
	}
	for svc := range sr {
		if _, ok := rr[svc]; !ok {
			t.Errorf("%s: a process of the demo's, never in Gym's capture", svc)
		}
	}
	if got, want := shapeFacts(sim), shapeFacts(real); !slices.Equal(got, want) {
		t.Errorf("request shapes: only in the demo's %q, only in Gym's %q", missing(want, got), missing(got, want))
	}
}

// missing lists what of have is not in of.
func missing(of, have []string) []string {
	var out []string
	for _, h := range have {
		if !slices.Contains(of, h) {
			out = append(out, h)
		}
	}
	return out
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
			var events []string
			for _, k := range kids[s.id] {
				typ := "-"
				if v, ok := k.attrs["asgi.event.type"]; ok {
					typ = fmt.Sprint(v)
				}
				if strings.HasSuffix(k.name, " http receive") {
					rcv++
					events = append(events, "receive "+typ)
				} else if strings.HasSuffix(k.name, " http send") {
					snd++
					events = append(events, "send "+typ)
				}
			}
			sort.Strings(events)
			facts[fmt.Sprintf("%s %v %v: %d receive + %d send (%s)", s.kind, s.attrs["http.method"], s.attrs["http.status_code"], rcv, snd, strings.Join(events, ", "))] = true
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
		// The start-up trace: who parents each span, across processes.
		if strings.HasPrefix(s.name, "gym.startup") || strings.HasPrefix(s.name, "gym.server.startup") {
			under := "root"
			if p := byID[s.parent]; p != nil {
				under = p.service + " " + p.name
			}
			count["start-up "+s.service+" "+s.name+" under "+under]++
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

// unraceDisconnects undoes, in a copy of spans, what G3's disconnect
// listener does when a 200 answer's caller is gone before the trailing
// empty body is sent: its receive then carries asgi.event.type
// http.disconnect (else none: it is cancelled) and the last send is never
// made. Which requests race depends on timing, so two runs differ there;
// the shapes are compared with every race undone. It returns the copy and
// how many requests raced.
func unraceDisconnects(spans []*capSpan) ([]*capSpan, int) {
	kids := map[string][]*capSpan{}
	for _, s := range spans {
		kids[s.parent] = append(kids[s.parent], s)
	}
	out := make([]*capSpan, 0, len(spans))
	raced := 0
	for _, s := range spans {
		if s.attrs["asgi.event.type"] == "http.disconnect" {
			c := *s
			c.keys, c.attrs = nil, map[string]any{}
			out = append(out, &c)
			continue
		}
		out = append(out, s)
		var body *capSpan
		disconnected := false
		for _, k := range kids[s.id] {
			switch k.attrs["asgi.event.type"] {
			case "http.disconnect":
				disconnected = true
			case "http.response.body":
				body = k
			}
		}
		if disconnected && body != nil {
			raced++
			c := *body
			c.id = body.id + "-unraced"
			out = append(out, &c)
		}
	}
	return out, raced
}

// metricFact is one metric as a process exports it, with the attribute keys
// of one of its data points: everything but the values and the number of
// points and exports.
type metricFact struct {
	service, scope, name, kind, unit, desc, keys string
}

func (m metricFact) String() string {
	return fmt.Sprintf("%s %s %s (%s %q, keys %s): %q", m.service, m.scope, m.name, m.kind, m.unit, m.keys, m.desc)
}

// compareMetrics reports the metrics only one side exports, by process.
func compareMetrics(t *testing.T, real, sim []metricFact) {
	t.Helper()
	if len(real) == 0 {
		t.Fatal("no metric in the real capture")
	}
	for _, m := range real {
		if !slices.Contains(sim, m) {
			t.Errorf("metric %s: in Gym's capture, not in the demo's", m)
		}
	}
	for _, m := range sim {
		if !slices.Contains(real, m) {
			t.Errorf("metric %s: in the demo's capture, never in Gym's", m)
		}
	}
}

// addMetric adds m with the attribute keys of one of its data points to
// facts unless it is there already; a metric without points is not added.
func addMetric(facts []metricFact, m metricFact, keys []string) []metricFact {
	sort.Strings(keys)
	m.keys = "[" + strings.Join(keys, ",") + "]"
	if !slices.Contains(facts, m) {
		facts = append(facts, m)
	}
	return facts
}

// readRecordMetrics reads the metric requests of --record's OTLP/JSON lines.
func readRecordMetrics(t *testing.T, path string) []metricFact {
	t.Helper()
	type kv struct {
		Key   string                     `json:"key"`
		Value map[string]json.RawMessage `json:"value"`
	}
	type points struct {
		DataPoints []struct {
			Attributes []kv `json:"attributes"`
		} `json:"dataPoints"`
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []metricFact
	for _, line := range bytes.Split(bytes.TrimSpace(raw), []byte("\n")) {
		if !bytes.Contains(line, []byte(`"resourceMetrics"`)) {
			continue
		}
		var req struct {
			ResourceMetrics []struct {
				Resource struct {
					Attributes []kv `json:"attributes"`
				} `json:"resource"`
				ScopeMetrics []struct {
					Scope struct {
						Name string `json:"name"`
					} `json:"scope"`
					Metrics []struct {
						Name        string  `json:"name"`
						Unit        string  `json:"unit"`
						Description string  `json:"description"`
						Histogram   *points `json:"histogram"`
						Sum         *points `json:"sum"`
						Gauge       *points `json:"gauge"`
					} `json:"metrics"`
				} `json:"scopeMetrics"`
			} `json:"resourceMetrics"`
		}
		if err := json.Unmarshal(line, &req); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for _, rm := range req.ResourceMetrics {
			service := ""
			for _, a := range rm.Resource.Attributes {
				if a.Key == "service.name" {
					_ = json.Unmarshal(a.Value["stringValue"], &service)
				}
			}
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					f := metricFact{service: service, scope: sm.Scope.Name, name: m.Name, unit: m.Unit, desc: m.Description}
					var p *points
					switch {
					case m.Histogram != nil:
						f.kind, p = "histogram", m.Histogram
					case m.Sum != nil:
						f.kind, p = "sum", m.Sum
					case m.Gauge != nil:
						f.kind, p = "gauge", m.Gauge
					default:
						t.Fatalf("%s: metric %s of an unexpected type", path, m.Name)
					}
					for _, dp := range p.DataPoints {
						var keys []string
						for _, a := range dp.Attributes {
							keys = append(keys, a.Key)
						}
						out = addMetric(out, f, keys)
					}
				}
			}
		}
	}
	return out
}

// readConsoleMetrics reads the metric records of a real capture's console
// logs (the Python SDK's compact MetricsData lines).
func readConsoleMetrics(t *testing.T, dir string) []metricFact {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.log.gz"))
	var out []metricFact
	for _, name := range files {
		for _, line := range testfile.Lines(t, name) {
			if !bytes.HasPrefix(line, []byte(`{"resource_metrics"`)) {
				continue
			}
			var rec struct {
				ResourceMetrics []struct {
					Resource struct {
						Attributes map[string]any `json:"attributes"`
					} `json:"resource"`
					ScopeMetrics []struct {
						Scope struct {
							Name string `json:"name"`
						} `json:"scope"`
						Metrics []struct {
							Name        string `json:"name"`
							Unit        string `json:"unit"`
							Description string `json:"description"`
							Data        struct {
								DataPoints []struct {
									Attributes map[string]any `json:"attributes"`
									Count      *json.Number   `json:"count"`
								} `json:"data_points"`
								Temporality *int  `json:"aggregation_temporality"`
								Monotonic   *bool `json:"is_monotonic"`
							} `json:"data"`
						} `json:"metrics"`
					} `json:"scope_metrics"`
				} `json:"resource_metrics"`
			}
			if err := json.Unmarshal(line, &rec); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			for _, rm := range rec.ResourceMetrics {
				service := fmt.Sprint(rm.Resource.Attributes["service.name"])
				for _, sm := range rm.ScopeMetrics {
					for _, m := range sm.Metrics {
						// The Python SDK's point types: a histogram has a
						// count, a sum a monotonic flag, a gauge neither.
						kind := "gauge"
						switch {
						case len(m.Data.DataPoints) > 0 && m.Data.DataPoints[0].Count != nil:
							kind = "histogram"
						case m.Data.Monotonic != nil:
							kind = "sum"
						}
						for _, dp := range m.Data.DataPoints {
							keys := make([]string, 0, len(dp.Attributes))
							for k := range dp.Attributes {
								keys = append(keys, k)
							}
							out = addMetric(out, metricFact{service: service, scope: sm.Scope.Name, name: m.Name, kind: kind, unit: m.Unit, desc: m.Description}, keys)
						}
					}
				}
			}
		}
	}
	return out
}
