package gymsim

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/nemo-gym/gymtrace/internal/golden"
	"github.com/nemo-gym/gymtrace/internal/testfile"
)

// captureDir holds the fleet's shared captures, one per variant setting,
// beside the real-Gym captures (see ../testdata/README.md).
const captureDir = "../testdata/gymsim"

// captureMeta is a capture's meta.json: the fleet settings that made it.
type captureMeta struct {
	Variant       string            `json:"gym_variant"`
	Seed          int64             `json:"seed"`
	Rollouts      int               `json:"rollouts"`
	Concurrency   int               `json:"concurrency"`
	Spec          string            `json:"spec"`
	ProcessSpecs  map[string]string `json:"process_specs,omitempty"`
	Observability bool              `json:"obs"`
	AIOHTTP       bool              `json:"aiohttp"`
	Standalone    bool              `json:"standalone"`
	RunID         string            `json:"run_id"`
}

var captures = []captureMeta{
	{Variant: "G1", Spec: "all"},
	{Variant: "G1", Spec: "default"},
	{Variant: "G1", Spec: "all", Observability: true},
	{Variant: "G1", Spec: "server,rollout,verify", AIOHTTP: true},
	{Variant: "G1c", Spec: "per_rollout"},
	{Variant: "G2", Spec: "default"},
	{Variant: "G3", Spec: "default"},
}

func (m captureMeta) name() string {
	n := m.Variant + "-" + strings.ReplaceAll(m.Spec, ",", "+")
	if m.Observability {
		n += "-obs"
	}
	if m.AIOHTTP {
		n += "-aiohttp"
	}
	return n
}

func (m captureMeta) config() Config {
	return Config{Seed: m.Seed, Variant: m.Variant, Spec: m.Spec, ProcessSpecs: m.ProcessSpecs, Rollouts: m.Rollouts,
		Concurrency: m.Concurrency, Observability: m.Observability, AIOHTTP: m.AIOHTTP, Standalone: m.Standalone,
		RunID: m.RunID, Protocol: "console", RecordTruth: true, Latency: time.Millisecond}
}

// TestCaptures checks the shared captures against the fleet: a fresh run
// with a capture's settings has the same spans (per process: names, kinds,
// groups, statuses, rollouts, parent names), so the files are what gymsim
// emits today. With -update it rewrites them.
func TestCaptures(t *testing.T) {
	for _, m := range captures {
		m.Seed, m.Rollouts, m.Concurrency, m.RunID = 7, 10, 4, "gymsim7"
		t.Run(m.name(), func(t *testing.T) {
			dir := filepath.Join(captureDir, m.name())
			var out bytes.Buffer
			cfg := m.config()
			cfg.Console = &out
			f := runFleet(t, cfg)
			truth := f.Truth()
			if golden.Updating() {
				writeCapture(t, dir, m, out.Bytes(), truth)
			}
			got := shapeOf(truth)
			want := shapeOf(readTruth(t, dir))
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s differs from a fresh run (rerun with -update and read the diff):\n%s", dir, diffShapes(want, got))
			}
		})
	}
}

// shapeOf counts spans by process, name, kind, group, status, rollout and
// parent name: what a seed fixes, whatever the timing.
func shapeOf(spans []TruthSpan) map[string]int {
	names := map[string]string{}
	for _, s := range spans {
		names[s.SpanID.String()] = s.Name
	}
	out := map[string]int{}
	for _, s := range spans {
		out[fmt.Sprintf("%s|%s|%v|%s|%v|%d|%s", s.Role, s.Name, s.Kind, s.Group, s.Status, s.Rollout, names[s.ParentID.String()])]++
	}
	return out
}

func diffShapes(want, got map[string]int) string {
	var lines []string
	for k, n := range got {
		if want[k] != n {
			lines = append(lines, fmt.Sprintf("  %s: capture %d, run %d", k, want[k], n))
		}
	}
	for k, n := range want {
		if _, ok := got[k]; !ok {
			lines = append(lines, fmt.Sprintf("  %s: capture %d, run 0", k, n))
		}
	}
	sort.Strings(lines)
	if len(lines) > 20 {
		lines = append(lines[:20], fmt.Sprintf("  … %d more", len(lines)-20))
	}
	return strings.Join(lines, "\n")
}

// writeCapture writes the capture as the real captures are laid out:
// console/<role>.log.gz, truth/<role>.jsonl.gz, meta.json, summary.json.
func writeCapture(t *testing.T, dir string, m captureMeta, console []byte, truth []TruthSpan) {
	t.Helper()
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{"console", "truth"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	byRole := map[string]*bytes.Buffer{}
	roleOf := map[string]string{}
	for _, s := range truth {
		roleOf[s.Service] = s.Role
	}
	sc := bufio.NewScanner(bytes.NewReader(console))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var l struct {
			Resource struct {
				Attributes map[string]any `json:"attributes"`
			} `json:"resource"`
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		role := roleOf[fmt.Sprint(l.Resource.Attributes["service.name"])]
		if byRole[role] == nil {
			byRole[role] = &bytes.Buffer{}
		}
		byRole[role].Write(sc.Bytes())
		byRole[role].WriteByte('\n')
	}
	for role, b := range byRole {
		writeGz(t, filepath.Join(dir, "console", role+".log.gz"), b.Bytes())
	}
	per := map[string][]TruthSpan{}
	for _, s := range truth {
		per[s.Role] = append(per[s.Role], s)
	}
	for role, spans := range per {
		var b bytes.Buffer
		if err := WriteTruth(&b, spans); err != nil {
			t.Fatal(err)
		}
		writeGz(t, filepath.Join(dir, "truth", role+".jsonl.gz"), b.Bytes())
	}
	for name, v := range map[string]any{"meta.json": m, "summary.json": Summarize(truth)} {
		b, err := json.MarshalIndent(v, "", " ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func writeGz(t *testing.T, path string, b []byte) {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// readTruth reads a capture's truth files back into TruthSpans (the fields
// shapeOf uses).
func readTruth(t *testing.T, dir string) []TruthSpan {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "truth", "*.jsonl.gz"))
	if len(files) == 0 {
		t.Fatalf("%s: no truth files (run with -update)", dir)
	}
	var out []TruthSpan
	for _, name := range files {
		dec := json.NewDecoder(bytes.NewReader(testfile.Gunzip(t, name)))
		for dec.More() {
			var l truthLine
			if err := dec.Decode(&l); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			s := TruthSpan{Name: l.Name, Role: l.Role, Group: l.Group, Rollout: -1, Service: l.Service}
			s.TraceID, _ = trace.TraceIDFromHex(l.TraceID)
			if l.Rollout != nil {
				s.Rollout = *l.Rollout
			}
			s.SpanID = mustSpanID(t, l.SpanID)
			if l.ParentSpanID != nil {
				s.ParentID = mustSpanID(t, *l.ParentSpanID)
			}
			s.Kind = kindOf(l.Kind)
			for c, n := range statusNames {
				if n == l.Status {
					s.Status = c
				}
			}
			out = append(out, s)
		}
	}
	return out
}

func mustSpanID(t *testing.T, h string) trace.SpanID {
	t.Helper()
	id, err := trace.SpanIDFromHex(h)
	if err != nil {
		t.Fatalf("span id %q: %v", h, err)
	}
	return id
}

func kindOf(s string) trace.SpanKind {
	for _, k := range []trace.SpanKind{trace.SpanKindInternal, trace.SpanKindServer, trace.SpanKindClient, trace.SpanKindProducer, trace.SpanKindConsumer} {
		if strings.ToUpper(k.String()) == s {
			return k
		}
	}
	return trace.SpanKindUnspecified
}

// TestSummarizeMatchesRealSummaries: Summarize over the real captures'
// truth gives their summary.json, so the fleet's summaries mean what the
// real ones do.
func TestSummarizeMatchesRealSummaries(t *testing.T) {
	cases, _ := filepath.Glob("../testdata/real-gym/*/*/summary.json")
	if len(cases) == 0 {
		t.Fatal("no real captures under ../testdata/real-gym")
	}
	for _, path := range cases {
		dir := filepath.Dir(path)
		t.Run(strings.TrimPrefix(dir, "../testdata/real-gym/"), func(t *testing.T) {
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var want Summary
			if err := json.Unmarshal(raw, &want); err != nil {
				t.Fatal(err)
			}
			got := Summarize(readTruth(t, dir))
			if got.Spans != want.Spans || got.Traces != want.Traces || got.Rollouts != want.Rollouts ||
				got.RolloutsJoined != want.RolloutsJoined || got.RolloutsSplit != want.RolloutsSplit ||
				got.NonRolloutSpans != want.NonRolloutSpans || got.NonRolloutTraces != want.NonRolloutTraces ||
				got.SpansPerRollout != want.SpansPerRollout || got.LeakedSpans != want.LeakedSpans ||
				!reflect.DeepEqual(got.PerGroup, want.PerGroup) || !reflect.DeepEqual(got.PerService, want.PerService) {
				t.Errorf("summary of the truth\n  %+v\nsummary.json\n  %+v", got, want)
			}
		})
	}
}
