package tui

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gate/whatif"
	"github.com/nemo-gym/gymtrace/model"
)

// r0000 has one model turn; r0001 two and a failing verify (helpers_test.go).
func TestMarkCompare(t *testing.T) {
	b := newBuilder(t)
	b.capture(t, 6, false)
	m := newTestModel(t, b, 140, 50, "default")
	m = keys(t, m, "2") // preview per_rollout: the model calls are kept
	if r := m.rollouts.Selected(); r == nil || r.ID != "r0000" {
		t.Fatalf("first rollout %v, want r0000", r)
	}
	m = keys(t, m, "m", "j")
	if m.marked != "r0000" || !strings.Contains(ansi.Strip(m.View()), glyphMarked+"r0000") {
		t.Fatalf("m marks nothing: marked %q", m.marked)
	}
	m = keys(t, m, "c")
	if !m.compare.isOpen() || m.front(slotTrace) != panel(m.compare) {
		t.Fatal("c does not open the comparison")
	}
	text := ansi.Strip(strings.Join(m.compare.lines, "\n"))
	for _, want := range []string{
		"A r0000 (marked): 189ms · 11 spans", "B r0001: 381ms · 14 spans", "B was 192ms slower than A (+",
		"first divergence under HTTP POST › POST /run › gym.rollout: A has nothing more",
		"only in B (3)", "gym.model.responses [policy_model]",
		"errors only in B (1)", "gym.verify [example_tools]",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("comparison lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "only in A") {
		t.Errorf("r0000 has nothing r0001 lacks:\n%s", text)
	}
	if !strings.Contains(ansi.Strip(m.View()), "Compare A r0000 (marked) · B r0001") {
		t.Errorf("the trace slot does not show the comparison:\n%s", ansi.Strip(m.View()))
	}
	// Unmarked, c compares the selected rollout under the current spec
	// (default) with itself under the previewed one (per_rollout), which
	// adds the model calls and the verify.
	m = keys(t, m, "esc", "m") // marks r0001, the selection
	if m.marked != "r0001" {
		t.Fatalf("m on r0001: marked %q", m.marked)
	}
	m = keys(t, m, "m", "c") // unmarks it, compares it under both specs
	text = ansi.Strip(strings.Join(m.compare.lines, "\n"))
	if !strings.Contains(m.compare.title, "r0001 under default · B r0001 under per_rollout") ||
		!strings.Contains(text, "only in B (3)") || strings.Contains(text, "only in A") {
		t.Errorf("current against preview: %s\n%s", m.compare.title, text)
	}
}

func TestExportKey(t *testing.T) {
	b := newBuilder(t)
	b.capture(t, 3, false)
	type call struct {
		path  string
		spans model.Batch
	}
	var calls []call
	m := newTestModel(t, b, 140, 50, "default")
	m.opts.ExportDir = t.TempDir()
	m.opts.Export = func(path string, _ *model.Interner, spans model.Batch) error {
		calls = append(calls, call{path, spans})
		return os.WriteFile(path, []byte("x\n"), 0o644)
	}
	sel := m.rollouts.Selected()
	m = keys(t, m, "x")
	want := filepath.Join(m.opts.ExportDir, "gymtrace-r0000.jsonl")
	if len(calls) != 1 || calls[0].path != want || len(calls[0].spans.Spans) != sel.Spans {
		t.Fatalf("x: calls %+v, want %s with the rollout's %d spans", calls, want, sel.Spans)
	}
	if !strings.Contains(m.status, "exported 11 spans to "+want) {
		t.Errorf("status %q", m.status)
	}
	// X: as under the previewed spec (default drops the model and verify spans).
	m = keys(t, m, "X")
	rep := whatif.NewEngine(m.reg).Preview(m.snap, m.opts.Current)
	kept := rep.PerRollout[0].Spans
	if len(calls) != 2 || !strings.HasSuffix(calls[1].path, "gymtrace-r0000-default.jsonl") || len(calls[1].spans.Spans) != kept {
		t.Errorf("X: %d calls, last %s with %d spans; want the %d the preview keeps", len(calls), calls[len(calls)-1].path, len(calls[len(calls)-1].spans.Spans), kept)
	}
	m.opts.Export = func(string, *model.Interner, model.Batch) error {
		return &os.PathError{Op: "open", Path: "/x", Err: errors.New("permission denied")}
	}
	m = keys(t, m, "x")
	if !m.statusErr || m.status != "export failed: permission denied" {
		t.Errorf("failed export: status %q (error %v)", m.status, m.statusErr)
	}
}

func TestWorthView(t *testing.T) {
	b := newBuilder(t)
	b.capture(t, 6, false)
	budget, err := whatif.ParseBudget("10spans/rollout")
	if err != nil {
		t.Fatal(err)
	}
	reg := groups.Default()
	cur, _ := reg.Parse("default")
	m := New(Options{Source: b.st, Registry: reg, Current: cur, CurrentSpec: "default", Title: "capture.jsonl",
		SnippetPath: filepath.Join(t.TempDir(), SnippetFile), Now: func() time.Time { return t0.Add(time.Hour) },
		Budget: &budget, SpanCost: time.Millisecond})
	m.refresh = time.Nanosecond
	m = send(t, m, tea.WindowSizeMsg{Width: 160, Height: 60})
	m = run(t, m, m.Init())
	view := ansi.Strip(m.View())
	if !strings.Contains(view, "budget          10 spans/rollout") || !strings.Contains(view, "misses by 1 (11)") {
		t.Errorf("the groups panel shows no budget verdict:\n%s", view)
	}
	m = keys(t, m, "w")
	if !m.worth.isOpen() || !m.worth.have {
		t.Fatal("w does not open the cost and worth view, or its rows never came")
	}
	text := ansi.Strip(strings.Join(m.worth.lines, "\n"))
	for _, want := range []string{"CPU at 1ms per enabled span; judged against default", "server", "http_client", "keeps (6 vs 0)", "model_call", "budget 10 spans/rollout: misses by"} {
		if !strings.Contains(text, want) {
			t.Errorf("cost and worth view lacks %q:\n%s", want, text)
		}
	}
	// CPU per second at the capture's rate, beside CPU per rollout.
	if !regexp.MustCompile(`group\s+on\s+spans/r\s+bytes/r\s+cpu ms\s+ms/s\s+wall`).MatchString(text) {
		t.Errorf("cost and worth view has no CPU per second column:\n%s", text)
	}
	for _, g := range m.worth.rows {
		if m.reg.Name(g.Group) == "server" && !regexp.MustCompile(`(?m)^ server\s+on\s+\S+\s+\S+\s+\S+\s+`+regexp.QuoteMeta(fmt.Sprintf("%.3f", g.CPUMSPerSecond))+`\s`).MatchString(text) {
			t.Errorf("server's CPU per second %.3f is not shown:\n%s", g.CPUMSPerSecond, text)
		}
	}
	// A new previewed spec is judged anew.
	m = keys(t, m, "3")
	if m.worth.rowsSpec != reg.All() {
		t.Errorf("rows judged against %s after 3, want all", reg.Format(m.worth.rowsSpec))
	}
}

// The statistics follow the scope: the selected rollout, the rollouts the
// filter lists, all of them.
func TestStatsScope(t *testing.T) {
	b := newBuilder(t)
	b.capture(t, 6, false)
	m := newTestModel(t, b, 140, 50, "default")
	m = keys(t, m, "/")
	m = typeText(t, m, "status=error")
	m = keys(t, m, "enter", "t")
	if m.stats.lat == nil || m.stats.lat.Rollouts != 1 || m.stats.lat.Spans != m.rollouts.Selected().Spans {
		t.Fatalf("t: %+v, want the selected rollout", m.stats.lat)
	}
	m = keys(t, m, "a")
	// r0001 and r0005 fail: 14 and 17 spans.
	if l := m.stats.lat; l == nil || l.Rollouts != 2 || l.Spans != 31 || !strings.Contains(ansi.Strip(m.stats.view()), "Statistics the listed rollouts · 31 spans in 2 rollouts") {
		t.Fatalf("a: %s %+v, want the 2 listed rollouts", m.stats.title, l)
	}
	var verify whatif.LatencyRow
	for _, r := range m.stats.lat.ByName {
		if r.Key == "gym.verify" {
			verify = r
		}
	}
	if verify.Count != 2 || verify.Errors != 2 {
		t.Errorf("gym.verify over the listed rollouts: %+v, want 2 spans, both failing", verify)
	}
	m = keys(t, m, "a")
	if l := m.stats.lat; l == nil || l.Rollouts != 6 || !strings.Contains(m.stats.title, "all rollouts") {
		t.Fatalf("a a: %s, want all 6 rollouts", m.stats.title)
	}
	m = keys(t, m, "a")
	if m.stats.scope != scopeRollout {
		t.Errorf("a cycles back to the rollout, got %v", m.stats.scope)
	}
}

// A real rollout under two specs is matched span by span by id: what the
// previewed spec drops is only in A, what moves under another parent is
// listed as moved, and no span is on both "only" lists.
func TestRealGymCompareSpecsByID(t *testing.T) {
	m := realModel(t, "s41-obs1-iso/all", 120, 40, "all")
	m = keys(t, m, "1", "c") // preview default, compare it with all
	text := ansi.Strip(strings.Join(m.compare.lines, "\n"))
	if strings.Contains(text, "only in B") || !strings.Contains(text, "only in A (") || !strings.Contains(text, "moved (") {
		t.Errorf("all against default:\n%s", text)
	}
}

// TestCompareSameShapeTimings: two rollouts of a real run with the same
// spans in the same tree still differ in time: the comparison says how
// much faster or slower B was, and each operation's time on both sides
// and the difference, in view at 80×24 as at 120×40 and 200×50.
func TestCompareSameShapeTimings(t *testing.T) {
	for _, sz := range []struct{ w, h int }{{80, 24}, {120, 40}, {200, 50}} {
		t.Run(fmt.Sprintf("%dx%d", sz.w, sz.h), func(t *testing.T) {
			m := realModel(t, "s41-obs0-iso/all", sz.w, sz.h, "default")
			rows := m.rollouts.rows
			a, b := -1, -1
			var d *whatif.Diff
			for i := 0; i < len(rows) && a < 0; i++ {
				for j := i + 1; j < len(rows); j++ {
					if d = whatif.CompareRollouts(whatif.RolloutSide(m.snap, rows[i]), whatif.RolloutSide(m.snap, rows[j])); d.First == nil && d.A.DurationNS != d.B.DurationNS {
						a, b = i, j
						break
					}
				}
			}
			if a < 0 {
				t.Fatal("no two rollouts of one shape")
			}
			for range a {
				m = keys(t, m, "down")
			}
			m = keys(t, m, "m")
			for range b - a {
				m = keys(t, m, "down")
			}
			m = keys(t, m, "c")
			view := ansi.Strip(m.View())
			word := "slower"
			if d.B.DurationNS < d.A.DurationNS {
				word = "faster"
			}
			if want := "B was " + fmtDur(abs64(d.B.DurationNS-d.A.DurationNS)) + " " + word + " than A ("; !strings.Contains(view, want) {
				t.Errorf("no %q:\n%s", want, view)
			}
			// The operation whose time changed most, with both times and the gap.
			top := d.Operations[0]
			for _, o := range d.Operations {
				if abs64(o.TotalNSB-o.TotalNSA) > abs64(top.TotalNSB-top.TotalNSA) {
					top = o
				}
			}
			row := regexp.MustCompile(regexp.QuoteMeta(fmtDur(top.TotalNSA)) + ` +` + regexp.QuoteMeta(fmtDur(top.TotalNSB)) + ` +` + regexp.QuoteMeta(signedDur(top.TotalNSB-top.TotalNSA)) + `[┃│]`)
			if !strings.Contains(view, "timings, most changed first") || !row.MatchString(view) {
				t.Errorf("the timings of %s [%s] are not in view:\n%s", top.Name, top.Service, view)
			}
			// The comparison takes the height: rows of timings, not one.
			if n := len(regexp.MustCompile(`(?m) [+-][\d.]+(ns|µs|ms|s)┃$`).FindAllString(view, -1)); n < 7 {
				t.Errorf("%d timing rows in view, want 7 or more:\n%s", n, view)
			}
		})
	}
}
