package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gate/whatif"
	"github.com/nemo-gym/gymtrace/model"
	"github.com/nemo-gym/gymtrace/tui"
)

const realGym = "../../testdata/real-gym/"

// realGymCase returns the console logs of a real-gym case.
func realGymCase(t *testing.T, c string) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(realGym, c, "console", "*.log.gz"))
	if len(files) == 0 {
		t.Fatalf("no capture in %s", filepath.Join(realGym, c))
	}
	return files
}

// spanText renders everything a reader keeps of a span, of trace and under
// parent, resolved through its snapshot, so spans of two stores compare as
// text.
func spanText(snap *model.Snapshot, trace model.TraceID, parent model.SpanID, sp *model.Span) string {
	in := snap.Interner()
	var b strings.Builder
	attrs := func(a model.Attrs) {
		a.Each(in, func(k string, v model.Value) bool {
			fmt.Fprintf(&b, " %s=%d:%s", k, v.Kind, v.String())
			return true
		})
	}
	fmt.Fprintf(&b, "%s %s parent=%s %q %s %d..%d %s", trace, sp.SpanID, parent, snap.Str(sp.Name), sp.Kind, sp.Start, sp.End, sp.Status)
	attrs(sp.Attrs)
	b.WriteString(" | res")
	attrs(snap.Resource(sp.Resource).Attrs)
	if ex := sp.Extra; ex != nil {
		fmt.Fprintf(&b, " | msg=%q dropped=%d", ex.StatusMessage, ex.DroppedAttrs)
		for _, ev := range ex.Events {
			fmt.Fprintf(&b, " | event %d %s", ev.Time, snap.Str(ev.Name))
			attrs(ev.Attrs)
		}
		for _, ln := range ex.Links {
			fmt.Fprintf(&b, " | link %s %s", ln.TraceID, ln.SpanID)
			attrs(ln.Attrs)
		}
	}
	return b.String()
}

// allSpans lists every span of snap (rollouts and jobs) as text, sorted.
func allSpans(snap *model.Snapshot) []string {
	var out []string
	for _, j := range snap.Jobs {
		out = append(out, spanText(snap, j.TraceID, j.ParentID(0), &j.Spans[0]))
	}
	for _, r := range snap.Rollouts {
		for _, f := range r.Fragments {
			for i := range f.Spans {
				out = append(out, spanText(snap, f.TraceID, f.ParentID(i), &f.Spans[i]))
			}
		}
	}
	sort.Strings(out)
	return out
}

func plainTree(t *testing.T, snap *model.Snapshot) string {
	t.Helper()
	var b bytes.Buffer
	if err := tui.PlainTree(&b, snap); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func exportCmd(args []string, o, e *bytes.Buffer) int { return runExport(args, o, e) }

// Export then open gives the same spans (ids, parents, times, attributes,
// events, links, resources) and the same trees, for every input format.
func TestExportRoundTrip(t *testing.T) {
	cases := map[string][]string{
		"all.console":      {gateCaptures + "all.console.jsonl"},
		"all.otlp":         {gateCaptures + "all.otlp.jsonl"},
		"per_rollout":      {gateCaptures + "per_rollout.console.jsonl"},
		"python-sdk-real":  {gateCaptures + "python-sdk-real.console.jsonl"},
		"real-gym-obs1":    nil,
		"real-gym-aiohttp": nil,
		"real-gym-leak":    nil,
	}
	for name, files := range cases {
		t.Run(name, func(t *testing.T) {
			switch name {
			case "real-gym-obs1":
				files = realGymCase(t, "s41-obs1-iso/all")
			case "real-gym-aiohttp":
				files = realGymCase(t, "s41-obs0-iso/aiohttp-all")
			case "real-gym-leak":
				files = realGymCase(t, "s41-obs0-leak/all")
			}
			out := filepath.Join(t.TempDir(), "out.jsonl")
			code, _, errOut := runGateCmd(t, exportCmd, append([]string{"-o", out}, files...)...)
			if code != exitOK {
				t.Fatalf("export exit %d: %s", code, errOut)
			}
			st1, orig, _, err := loadCaptures(files)
			defer st1.Close()
			if err != nil {
				t.Fatal(err)
			}
			st2, back, rep, err := loadCaptures([]string{out})
			defer st2.Close()
			if err != nil {
				t.Fatal(err)
			}
			if rep.Skipped+rep.BadLines > 0 {
				t.Errorf("reading the export skipped %d lines: %v", rep.Skipped+rep.BadLines, rep.BadSamples)
			}
			a, b := allSpans(orig), allSpans(back)
			if len(a) != len(b) {
				t.Fatalf("export holds %d spans, the capture %d", len(b), len(a))
			}
			for i := range a {
				if a[i] != b[i] {
					t.Fatalf("span differs after export and open:\n capture %s\n  export %s", a[i], b[i])
				}
			}
			// Metric and log records are counted on reading, not exported.
			counts := regexp.MustCompile(` metric_points=\d+ log_records=\d+`)
			pa, pb := counts.ReplaceAllString(plainTree(t, orig), ""), counts.ReplaceAllString(plainTree(t, back), "")
			if pa != pb {
				t.Errorf("trees differ after export and open:\ncapture:\n%s\nexport:\n%s", pa, pb)
			}
		})
	}
}

// With --spec S the export holds exactly the spans the preview keeps, each
// under the ancestor the preview's tree shows, and as many traces as the
// preview counts; over Gym's real capture that is also what the real run
// under S emitted.
func TestExportSpec(t *testing.T) {
	for _, tc := range []struct{ capture, spec string }{
		{"s41-obs0-iso/all", "per_rollout"},
		{"s41-obs0-iso/all", "default"},
		{"s41-obs0-iso/all", "server,rollout,verify"},
		{"s41-obs0-iso/all", "rollout,verify,model_call"},
		{"s41-obs0-leak/all", "per_rollout"}, // carry-over spans in the traces their contexts came from
		{"s41-obs1-iso/all", "rollout,verify"},
	} {
		spec := tc.spec
		t.Run(tc.capture+"/"+spec, func(t *testing.T) {
			all := realGymCase(t, tc.capture)
			out := filepath.Join(t.TempDir(), "out.jsonl")
			code, _, errOut := runGateCmd(t, exportCmd, append([]string{"--spec", spec, "-o", out}, all...)...)
			if code != exitOK {
				t.Fatalf("export exit %d: %s", code, errOut)
			}
			st1, orig, _, err := loadCaptures(all)
			defer st1.Close()
			if err != nil {
				t.Fatal(err)
			}
			st2, back, _, err := loadCaptures([]string{out})
			defer st2.Close()
			if err != nil {
				t.Fatal(err)
			}
			reg := groups.Default()
			set, err := reg.Parse(spec)
			if err != nil {
				t.Fatal(err)
			}
			eng := whatif.NewEngine(reg)
			rep := eng.Preview(orig, set)
			if back.Stats.Stored != rep.Result.Spans || back.Stats.Traces != rep.Result.Traces {
				t.Errorf("export: %d spans in %d traces; preview: %d spans in %d traces",
					back.Stats.Stored, back.Stats.Traces, rep.Result.Spans, rep.Result.Traces)
			}
			// Span for span: each kept span's parent is the preview tree's.
			parentOf := map[model.SpanID]model.SpanID{}
			for _, r := range back.Rollouts {
				for _, f := range r.Fragments {
					for i := range f.Spans {
						parentOf[f.Spans[i].SpanID] = f.ParentID(i)
					}
				}
			}
			for _, j := range back.Jobs {
				parentOf[j.Spans[0].SpanID] = j.ParentID(0)
			}
			kept := 0
			for _, r := range eng.Pieces(orig) {
				sim := eng.SimulateRollout(orig, r, set)
				for fi, f := range r.Fragments {
					fs := sim.Frags[fi]
					for i := range f.Spans {
						id := f.Spans[i].SpanID
						got, ok := parentOf[id]
						if ok != fs.Kept[i] {
							t.Fatalf("rollout %s span %s %q: exported %v, kept by the preview %v", r.ID, id, orig.Str(f.Spans[i].Name), ok, fs.Kept[i])
						}
						if !ok {
							continue
						}
						kept++
						if p := fs.Parent[i]; p >= 0 && got != f.Spans[p].SpanID {
							t.Errorf("span %s %q: exported under %s, the preview puts it under %s", id, orig.Str(f.Spans[i].Name), got, f.Spans[p].SpanID)
						}
						carried := f.Spans[i].Flags()&model.FlagCarried != 0
						if fs.Cut[i] != whatif.CauseNone && !carried && !got.IsZero() {
							t.Errorf("span %s %q starts a trace in the preview, exported under %s", id, orig.Str(f.Spans[i].Name), got)
						}
						if captured := f.ParentID(i); fs.Cut[i] != whatif.CauseNone && carried && got != captured {
							t.Errorf("carried-over span %s %q exported under %s, captured under %s", id, orig.Str(f.Spans[i].Name), got, captured)
						}
					}
				}
			}
			if kept+len(back.Jobs) != back.Stats.Stored {
				t.Errorf("%d rollout spans and %d job spans exported, %d read back", kept, len(back.Jobs), back.Stats.Stored)
			}
			// The real run under the spec, from the same seed.
			summary := filepath.Join(realGym, filepath.Dir(tc.capture), "spec-"+strings.ReplaceAll(spec, ",", "+"), "summary.json")
			if strings.Contains(tc.capture, "leak") {
				summary = "" // which spans get carried over depends on timing: no run matches another
			}
			if raw, err := os.ReadFile(summary); summary != "" && (err == nil || !os.IsNotExist(err)) {
				var truth struct{ Spans, Traces int }
				if err := json.Unmarshal(raw, &truth); err != nil {
					t.Fatal(err)
				}
				if back.Stats.Stored != truth.Spans || back.Stats.Traces != truth.Traces {
					t.Errorf("export: %d spans in %d traces; the real run under %s emitted %d in %d", back.Stats.Stored, back.Stats.Traces, spec, truth.Spans, truth.Traces)
				}
			}
		})
	}
}

func TestExportSelect(t *testing.T) {
	capture := gateCaptures + "all.otlp.jsonl"
	dir := t.TempDir()
	out := filepath.Join(dir, "two.jsonl")
	code, _, errOut := runGateCmd(t, exportCmd, "--rollout", "s3-r0004", "--rollout", "s3-r0001", "-o", out, capture)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	st, snap, _, err := loadCaptures([]string{out})
	defer st.Close()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range snap.Rollouts {
		ids = append(ids, r.ID)
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []string{"s3-r0001", "s3-r0004"}) || len(snap.Jobs) != 1 {
		t.Errorf("export of two rollouts reads back as %v with %d job spans, want both and the run's gym.job", ids, len(snap.Jobs))
	}
	out = filepath.Join(dir, "where.jsonl")
	if code, _, errOut := runGateCmd(t, exportCmd, "--where", "name=gym.verify status=error", "-o", out, capture); code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	st2, snap2, _, err := loadCaptures([]string{out})
	defer st2.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(snap2.Rollouts) != 1 || snap2.Rollouts[0].ID != "s3-r0001" {
		t.Errorf("--where export holds %d rollouts, want s3-r0001 alone", len(snap2.Rollouts))
	}

	bad := []struct {
		args []string
		want string
	}{
		{[]string{capture}, "-o OUT.jsonl is required"},
		{[]string{"-o", out, "--rollout", "nope", capture}, `--rollout "nope": no such rollout in the capture (it holds s3-r`},
		{[]string{"-o", out, "--spec", "bogus", capture}, "--spec: "},
		{[]string{"-o", out, "--where", "id=none", capture}, `no rollout matches --where "id=none"`},
		{[]string{"-o", filepath.Join(dir, "no", "such", "dir.jsonl"), capture}, "no such file or directory"},
	}
	for _, b := range bad {
		code, _, errOut := runGateCmd(t, exportCmd, b.args...)
		if code != exitUsage || !strings.Contains(errOut, b.want) {
			t.Errorf("export %q: exit %d, stderr %q; want exit 2 and %q", b.args, code, errOut, b.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "no", "such", "dir.jsonl.tmp")); err == nil {
		t.Error("a failed export left its temporary file")
	}
}
