package receiver

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"

	"github.com/nemo-gym/gymtrace/internal/golden"
	"github.com/nemo-gym/gymtrace/model"
)

// loadFile reads one file into a fresh store and returns its spans.
func loadFile(t testing.TB, path string, opts ReadOptions) (*model.Store, []model.Span, FileReport) {
	t.Helper()
	st := model.NewStore(model.Options{})
	t.Cleanup(st.Close)
	rep, err := ReadFiles(st, []string{path}, opts)
	if err != nil {
		t.Fatalf("ReadFiles(%s): %v", path, err)
	}
	st.Sync()
	return st, snapshotSpans(st.Snapshot()).Spans, rep
}

// snapshotSpans returns every span of s with its fragment's trace id and
// its parent's id.
func snapshotSpans(s *model.Snapshot) model.Batch {
	var out model.Batch
	add := func(f *model.Fragment) {
		for i := range f.Spans {
			out.Append(f.TraceID, f.ParentID(i), f.Spans[i])
		}
	}
	for _, j := range s.Jobs {
		add(j)
	}
	for _, r := range s.Rollouts {
		for _, f := range r.Fragments {
			add(f)
		}
	}
	return out
}

// TestConsoleMatchesOTLP proves that the console log and the OTLP/JSON
// capture of the same run decode to the same spans: ids, parents, names,
// kinds, status, attributes, events, links and resources; times agree to the
// console's microsecond precision and WireSize estimates to a few percent.
func TestConsoleMatchesOTLP(t *testing.T) {
	cst, _, _ := loadFile(t, "testdata/all.console.jsonl", ReadOptions{})
	ost, _, _ := loadFile(t, "testdata/all.otlp.jsonl", ReadOptions{})
	cons, otlp := snapshotSpans(cst.Snapshot()), snapshotSpans(ost.Snapshot())
	if len(cons.Spans) != 341 || len(otlp.Spans) != 341 {
		t.Fatalf("spans: console %d, otlp %d; want 341 each", len(cons.Spans), len(otlp.Spans))
	}
	byID := map[model.SpanID]int{}
	for i := range otlp.Spans {
		byID[otlp.Spans[i].SpanID] = i
	}
	ci, oi := cst.Interner(), ost.Interner()
	var csize, osize int
	maxRel := 0.0
	for i := range cons.Spans {
		c := &cons.Spans[i]
		k, ok := byID[c.SpanID]
		if !ok {
			t.Errorf("span %s is in the console log only", c.SpanID)
			continue
		}
		o := &otlp.Spans[k]
		if cd, od := dumpSpan(ci, cons.Traces[i], cons.ParentOf(i), c, dumpOpts{}), dumpSpan(oi, otlp.Traces[k], otlp.ParentOf(k), o, dumpOpts{}); cd != od {
			t.Errorf("span %s differs:\nconsole: %s\notlp:    %s", c.SpanID, cd, od)
		}
		if d := math.Abs(float64(c.Start - o.Start)); d > 1500 {
			t.Errorf("span %s start %d vs %d", c.SpanID, c.Start, o.Start)
		}
		if d := math.Abs(float64(c.End - o.End)); d > 1500 {
			t.Errorf("span %s end %d vs %d", c.SpanID, c.End, o.End)
		}
		csize += int(c.WireSize())
		osize += int(o.WireSize())
		maxRel = max(maxRel, math.Abs(float64(c.WireSize())-float64(o.WireSize()))/float64(o.WireSize()))
	}
	rel := math.Abs(float64(csize-osize)) / float64(osize)
	t.Logf("wire bytes: console estimate %d, otlp exact %d (%.2f%% apart; worst span %.1f%%)", csize, osize, 100*rel, 100*maxRel)
	if rel > 0.03 {
		t.Errorf("console WireSize total %d vs otlp %d: %.1f%% apart, want within 3%%", csize, osize, 100*rel)
	}
	if maxRel > 0.10 {
		t.Errorf("worst span WireSize estimate %.1f%% off, want within 10%%", 100*maxRel)
	}
}

// TestConsoleSkipsNonSpans checks the three non-span lines of the fixture are
// skipped, counted and named by line number, and the metric record counted.
func TestConsoleSkipsNonSpans(t *testing.T) {
	st, spans, rep := loadFile(t, "testdata/all.console.jsonl", ReadOptions{})
	if len(spans) != 341 || rep.Spans != 341 {
		t.Fatalf("spans = %d (report %d), want 341", len(spans), rep.Spans)
	}
	var got []string
	for _, s := range rep.SkippedSamples {
		got = append(got, s.String())
	}
	want := []string{
		"testdata/all.console.jsonl:65: not JSON (plain text)",
		"testdata/all.console.jsonl:122: metric record (1 data points)",
		"testdata/all.console.jsonl:138: not JSON (plain text)",
	}
	if rep.Skipped != 3 || strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("skipped %d:\n%s\nwant 3:\n%s", rep.Skipped, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if rep.BadLines != 0 {
		t.Errorf("bad lines = %v, want none", rep.BadSamples)
	}
	if s := st.Snapshot().Stats; s.MetricPoints != 1 || rep.MetricPoints != 1 {
		t.Errorf("metric points: store %d, report %d; want 1", s.MetricPoints, rep.MetricPoints)
	}
	if m := st.Snapshot().Metrics; len(m) != 1 || m["http.server.active_requests"] != 1 {
		t.Errorf("metric points by name = %v, want http.server.active_requests:1", m)
	}
	if f := rep.Files[0]; f.Format != FormatConsole || f.Lines != 344 || f.Skipped != 3 {
		t.Errorf("file stat = %+v", f)
	}
}

// TestReadFixtures dumps what each fixture decodes to, as a golden.
func TestReadFixtures(t *testing.T) {
	tests := []struct {
		name, file       string
		spans, rollouts  int
		traces, services int
		golden           bool
	}{
		{"all_console", "all.console.jsonl", 341, 6, 1, 4, true},
		{"per_rollout_console", "per_rollout.console.jsonl", 332, 6, 6, 4, false},
		{"python_sdk_real", "python-sdk-real.console.jsonl", 6, 1, 1, 2, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, spans, rep := loadFile(t, "testdata/"+tt.file, ReadOptions{})
			s := st.Snapshot()
			services := 0
			for _, n := range s.Services {
				if n > 0 {
					services++
				}
			}
			if len(spans) != tt.spans || s.Stats.Rollouts != tt.rollouts || s.Stats.Traces != tt.traces || services != tt.services {
				t.Errorf("spans=%d rollouts=%d traces=%d services=%d; want %d %d %d %d",
					len(spans), s.Stats.Rollouts, s.Stats.Traces, services, tt.spans, tt.rollouts, tt.traces, tt.services)
			}
			if !tt.golden {
				return
			}
			var b strings.Builder
			fmt.Fprintf(&b, "spans=%d rollouts=%d traces=%d skipped=%d bad=%d\n", len(spans), s.Stats.Rollouts, s.Stats.Traces, rep.Skipped, rep.BadLines)
			b.WriteString(dumpSpans(st.Interner(), snapshotSpans(s), dumpOpts{times: true, wireSize: true, serviceOnly: tt.name != "python_sdk_real"}))
			golden.Check(t, []byte(b.String()))
		})
	}
}

func TestConsoleLine(t *testing.T) {
	const base = `{"name": "gym.verify", "context": {"trace_id": "0xfaa3fe8f29381a794b7f927603c067b8", "span_id": "0xc4b30436a7c0966c", "trace_state": "[]"}, "kind": "SpanKind.INTERNAL", "parent_id": "0xf1b7c32d91df14d0", "start_time": "2026-11-29T18:43:51.657870Z", "end_time": "2026-11-29T18:43:51.658687Z", "status": {"status_code": "ERROR", "description": "x"}, "attributes": {"a": [1, 2.5, "s", true, null, [["n"]], {"k": -3}], "u": "caf\u00e9 \ud83d\ude00", "nemo.span.truncated": true}, "events": [], "links": [], "resource": {"attributes": {"service.name": "svc"}, "schema_url": ""}}`
	tests := []struct {
		name, in, want string
	}{
		{"span", base, `span faa3fe8f29381a794b7f927603c067b8/c4b30436a7c0966c parent=f1b7c32d91df14d0 INTERNAL "gym.verify" status=ERROR start=1795977831657870000 end=1795977831658687000 flags=001
  resource service="svc" service.name=s:"svc"
  attrs a=arr:"[1,2.5,\"s\",true,null,[[\"n\"]],{\"k\":-3}]" u=s:"café 😀" nemo.span.truncated=b:"true"
  status_message "x"
`},
		{"keys in any order, null parent", `{"resource": {"attributes": {}}, "parent_id": null, "kind": "SpanKind.CLIENT", "context": {"span_id": "0x0000000000000002", "trace_id": "0x00000000000000000000000000000001"}, "name": "HTTP GET", "start_time": "2026-01-01T00:00:00+00:00"}`,
			`span 00000000000000000000000000000001/0000000000000002 parent=- CLIENT "HTTP GET" status=UNSET start=1767225600000000000 end=0
  resource service="" 
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, l := newLocal()
			c := newConsoleDecoder(l, Limits{})
			defer c.release()
			sp, trace, kind, err := c.line([]byte(tt.in))
			if err != nil || kind != recSpan {
				t.Fatalf("line(%s) = kind %d, %v", tt.in, kind, err)
			}
			if got := dumpSpan(in, trace, c.parent, &sp, dumpOpts{times: true}); got != tt.want {
				t.Errorf("line(%s) =\n%s\nwant\n%s", tt.in, got, tt.want)
			}
		})
	}
}

func TestConsoleLineErrors(t *testing.T) {
	const ok = `{"name": "n", "context": {"trace_id": "0x0102030405060708090a0b0c0d0e0f10", "span_id": "0x1112131415161718"}, "kind": "SpanKind.SERVER", "start_time": "2026-11-29T18:43:51.657870Z"}`
	tests := []struct{ name, in, want string }{
		{"bad trace id", strings.Replace(ok, "0x0102", "0xzz02", 1), `context.trace_id: bad trace id "0xzz02030405060708090a0b0c0d0e0f10"`},
		{"short span id", strings.Replace(ok, "0x1112131415161718", "0x11", 1), `context.span_id: bad span id "0x11"`},
		{"bad kind", strings.Replace(ok, "SpanKind.SERVER", "SpanKind.BOSS", 1), `unknown span kind "SpanKind.BOSS"`},
		{"bad time", strings.Replace(ok, "2026-11-29T18:43:51.657870Z", "yesterday", 1), `bad time "yesterday": want ISO 8601 like 2026-11-29T18:55:26.369990Z`},
		{"cut line", ok[:60], "context: line ends inside a JSON value"},
		{"missing comma", strings.Replace(ok, `, "kind"`, ` "kind"`, 1), "column 110: want ',' or '}'"},
		{"trailing data", ok + `x`, "column 182: unexpected data after the object"},
		{"control char", strings.Replace(ok, `"n"`, "\"a\tb\"", 1), `column 12: invalid character '\t' in string literal`},
		{"bad attr value", strings.Replace(ok, `"kind"`, `"attributes": {"k": nope}, "kind"`, 1), `attributes."k": column 131: invalid value`},
		{"no ids", `{"name": "n", "context": {}}`, "context: trace_id and span_id are required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, l := newLocal()
			c := newConsoleDecoder(l, Limits{})
			defer c.release()
			_, _, _, err := c.line([]byte(tt.in))
			if err == nil || err.Error() != tt.want {
				t.Fatalf("line(%s) error = %v\nwant %s", tt.in, err, tt.want)
			}
		})
	}
}

func TestConsoleRecordKinds(t *testing.T) {
	tests := []struct {
		in   string
		want recordKind
	}{
		{`{"resource_metrics": []}`, recMetrics},
		{`{"resourceSpans": []}`, recOTLPTraces},
		{`{"resourceLogs": []}`, recLogs},
		{`{"body": "hello", "severity_number": 9}`, recLogRecord},
		{`{"level": "info", "msg": "started"}`, recOther},
	}
	for _, tt := range tests {
		_, l := newLocal()
		c := newConsoleDecoder(l, Limits{})
		_, _, kind, err := c.line([]byte(tt.in))
		c.release()
		if err != nil || kind != tt.want {
			t.Errorf("line(%s) = %d, %v; want kind %d", tt.in, kind, err, tt.want)
		}
	}
}

func TestParseISO(t *testing.T) {
	tests := []struct {
		in   string
		want int64
	}{
		{"1970-01-01T00:00:00.000000Z", 0},
		{"2026-11-29T18:55:26.369990Z", 1795978526369990000},
		{"2000-02-29T23:59:59.123456789Z", 951868799123456789},
		{"1969-12-31T23:59:59.5Z", -500000000},
		{"2026-11-29T18:55:26Z", 1795978526000000000},
		{"2026-11-29T19:55:26.5+01:00", 1795978526500000000},
	}
	for _, tt := range tests {
		got, err := parseISO([]byte(tt.in))
		if err != nil || got != tt.want {
			t.Errorf("parseISO(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
	keys := make([]string, 0)
	for k := range kindByName {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if got, ok := parseKind([]byte(k)); !ok || "SpanKind."+got.String() != k {
			t.Errorf("parseKind(%q) = %s, %v", k, got, ok)
		}
	}
}
