package tui

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/muesli/termenv"
	"github.com/nemo-gym/gymtrace/gate/filter"
	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gate/whatif"
	"github.com/nemo-gym/gymtrace/model"
)

func ids(rs []*model.Rollout) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.ID)
	}
	return out
}

func TestSortCycles(t *testing.T) {
	b := newBuilder(t)
	b.capture(t, 6, false)
	m := newTestModel(t, b, 120, 40, "default")
	// Rollouts i have 1+i%3 model turns (spans 11, 14, 17) and i%4 == 1 fails.
	want := []struct {
		mode  string
		first []string
	}{
		{"start time", []string{"r0000", "r0001"}},
		{"duration", []string{"r0002", "r0005"}},
		{"spans", []string{"r0002", "r0005"}},
		{"errors", []string{"r0001", "r0005"}},
		{"id", []string{"r0000", "r0001"}},
		{"first seen", []string{"r0000", "r0001"}},
	}
	for _, w := range want {
		m = keys(t, m, "s")
		if got := m.rollouts.sort.String(); got != w.mode {
			t.Fatalf("sort = %q, want %q", got, w.mode)
		}
		if got := ids(m.rollouts.rows)[:2]; !slices.Equal(got, w.first) {
			t.Errorf("sort %s: first rows = %v, want %v", w.mode, got, w.first)
		}
	}
	m = keys(t, m, "s", "S") // start time, reversed: the latest first
	if got := ids(m.rollouts.rows)[:2]; !slices.Equal(got, []string{"r0005", "r0004"}) || !strings.Contains(m.View(), "sort: latest start") {
		t.Errorf("reversed start-time sort: first rows = %v", got)
	}
	m = keys(t, m, "s", "s", "s", "s") // id, still reversed: ids descend, and the title says so
	if got := ids(m.rollouts.rows)[:2]; !slices.Equal(got, []string{"r0005", "r0004"}) || !strings.Contains(m.View(), "sort: id z→a") {
		t.Errorf("reversed id sort: first rows = %v\n%s", got, m.View())
	}
}

// A new sort order starts from the top: the cursor, far down the old
// order, does not pull the view to where its rollout went.
func TestSortStartsAtTop(t *testing.T) {
	b := newBuilder(t)
	b.capture(t, 40, false)
	m := newTestModel(t, b, 80, 24, "default")
	m = keys(t, m, "G") // the last rollout, the list scrolled to it
	if m.rollouts.offset == 0 {
		t.Fatalf("the list did not scroll to the bottom")
	}
	for _, k := range []string{"s", "S"} {
		m = keys(t, m, k)
		if m.rollouts.cursor != 0 || m.rollouts.offset != 0 {
			t.Errorf("after %s: cursor %d, offset %d; want the top", k, m.rollouts.cursor, m.rollouts.offset)
		}
		if sel := m.rollouts.Selected(); sel == nil || sel != m.rollouts.rows[0] || m.trace.Rollout() != sel {
			t.Errorf("after %s: the first row is not the one shown", k)
		}
		m = keys(t, m, "G")
	}
}

func TestFilter(t *testing.T) {
	tests := []struct {
		name, filter string
		want         []string
	}{
		{"id", "r0003", []string{"r0003"}},
		{"error", "ERROR", []string{"r0001", "r0005"}},
		{"service", "policy_model", []string{"r0000", "r0001", "r0002", "r0003", "r0004", "r0005"}},
		{"span name", "gym.verify", []string{"r0000", "r0001", "r0002", "r0003", "r0004", "r0005"}},
		{"nothing", "sandbox", nil},
		{"trace id", "AB000000000000000000000000000004", []string{"r0003"}},
		{"status and name on one span", "status=error name=gym.verify", []string{"r0001", "r0005"}},
		{"one span, not two", "status=error name=gym.rollout", nil},
		{"no error", "-status=error", []string{"r0000", "r0002", "r0003", "r0004"}},
		{"attribute and duration", "service=policy_model dur>=0s", []string{"r0000", "r0001", "r0002", "r0003", "r0004", "r0005"}},
		{"id~", "id~r000 id!=r0000", []string{"r0001", "r0002", "r0003", "r0004", "r0005"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder(t)
			b.capture(t, 6, false)
			m := newTestModel(t, b, 120, 40, "default")
			m = keys(t, m, "/")
			m = typeText(t, m, tc.filter)
			m = keys(t, m, "enter")
			if got := ids(m.rollouts.rows); !slices.Equal(got, tc.want) {
				t.Errorf("filter %q = %v, want %v", tc.filter, got, tc.want)
			}
			m = keys(t, m, "esc")
			if got := len(m.rollouts.rows); got != 6 {
				t.Errorf("after esc %d rows, want 6", got)
			}
		})
	}
}

// A new snapshot that adds rollouts and reorders the list keeps the cursor on
// the rollout it was on.
func TestLiveUpdateKeepsCursor(t *testing.T) {
	b := newBuilder(t)
	b.capture(t, 4, false)
	m := newTestModel(t, b, 120, 40, "default")
	m = keys(t, m, "s", "s") // sort by spans
	m = keys(t, m, "down", "down")
	sel := m.rollouts.Selected().ID
	// More rollouts, with different span counts, arrive.
	var spans model.Batch
	for i := 10; i < 16; i++ {
		spans, _ = b.emit(spans, traceID(i), model.SpanID{}, t0.UnixNano(), rolloutTree("n"+string(rune('a'+i)), 3, false))
	}
	if err := b.st.Add(spans); err != nil {
		t.Fatal(err)
	}
	b.st.Sync()
	m = send(t, m, snapshotMsg{snap: b.st.Snapshot()})
	if got := len(m.rollouts.rows); got != 10 {
		t.Fatalf("%d rows after update, want 10", got)
	}
	if got := m.rollouts.Selected().ID; got != sel {
		t.Errorf("cursor on %s after update, want %s", got, sel)
	}
	if got := m.trace.Rollout().ID; got != sel {
		t.Errorf("trace shows %s, want %s", got, sel)
	}
}

func TestPresetsAndToggle(t *testing.T) {
	b := newBuilder(t)
	b.capture(t, 5, true) // captured under "all": one trace under gym.job
	m := newTestModel(t, b, 120, 40, "all")
	reg := testRegistry()
	for _, tc := range []struct{ key, preset string }{{"1", "default"}, {"2", "per_rollout"}, {"3", "all"}} {
		m = keys(t, m, tc.key)
		want, _ := reg.PresetSet(tc.preset)
		if m.groups.Preview() != want {
			t.Errorf("key %s: preview %s, want %s", tc.key, reg.Format(m.groups.Preview()), tc.preset)
		}
		if m.groups.prevRep == nil || m.groups.prevRep.Spec != want {
			t.Errorf("key %s: preview report not recomputed for %s", tc.key, tc.preset)
		}
	}
	m = keys(t, m, "1")
	withJob := m.groups.prevRep.Result.Traces
	// Toggle job off in the groups panel: every rollout becomes its own trace.
	m = keys(t, m, "tab", "tab", "g", " ")
	if m.groups.Preview().Has(groups.Job) {
		t.Fatalf("space did not toggle job off")
	}
	if got := m.groups.prevRep.Result.Traces; got != 5 || withJob != 1 {
		t.Errorf("traces with job %d, without %d; want 1 and 5", withJob, got)
	}
}

func TestHTTPClientOffReportsBreak(t *testing.T) {
	b := newBuilder(t)
	b.capture(t, 3, false)
	m := newTestModel(t, b, 120, 40, "all")
	m = keys(t, m, "2", "tab", "tab", "g", "down", "down", " ")
	if m.groups.Preview().Has(groups.HTTPClient) {
		t.Fatalf("http_client still on")
	}
	rep := m.groups.prevRep
	if rep.Result.RolloutsSplit != 3 {
		t.Errorf("split rollouts %d, want 3", rep.Result.RolloutsSplit)
	}
	br := aggregateBreaks(rep, nil)
	if len(br) == 0 || !strings.Contains(br[0].reason, "http_client") {
		t.Fatalf("breaks = %+v, want one naming http_client", br)
	}
	// One entry per hop, counted as preview --json counts: rollouts and spans.
	seen := map[string]bool{}
	spans := 0
	for _, b := range br {
		k := b.from + b.to + b.span + b.reason
		if seen[k] {
			t.Errorf("hop listed twice: %+v", b)
		}
		seen[k] = true
		spans += b.spans
		if b.rollouts != 3 {
			t.Errorf("hop %s → %s breaks %d rollouts, want 3", b.from, b.to, b.rollouts)
		}
	}
	want := 0
	for _, pr := range rep.PerRollout {
		for _, b := range pr.Breaks {
			want += b.Count
		}
	}
	if spans != want {
		t.Errorf("hops count %d spans, the report %d", spans, want)
	}
	if cl := strings.Join(m.groups.compareLines(80), "\n"); !strings.Contains(cl, "note: preview the spec lacks http_client") {
		t.Errorf("no spec warning:\n%s", cl)
	}
	if v := m.View(); !strings.Contains(v, "✗ 3/3 split") || !strings.Contains(v, "http_client off") {
		t.Errorf("view does not report the break:\n%s", v)
	}
}

// TestSpecInputDrops: from G2 on Gym drops an unknown name and applies the
// rest; the panel previews the rest and says what was dropped.
func TestSpecInputDrops(t *testing.T) {
	v, _ := groups.LookupVariant("G3")
	b := newBuilder(t)
	b.capture(t, 2, false)
	m := newTestModel(t, b, 120, 40, "default")
	m.reg, m.groups.reg = v.Registry(), v.Registry()
	m = keys(t, m, ":")
	m.groups.input.SetValue("")
	m = typeText(t, m, "per_rollout,concurrency")
	m = keys(t, m, "enter")
	want, _ := v.Registry().PresetSet("per_rollout")
	if m.groups.Inputting() || m.groups.Preview() != want {
		t.Fatalf("preview %v (inputting %v), want G3's per_rollout", v.Registry().Names(m.groups.Preview()), m.groups.Inputting())
	}
	if !strings.Contains(m.View(), `Gym drops "concurrency" with a warning and applies the rest`) {
		t.Errorf("the panel does not say what Gym dropped:\n%s", m.View())
	}
}

func TestSpecInput(t *testing.T) {
	tests := []struct {
		name, text string
		want       string // spec after enter; "" means an error stays open
		errHas     []string
	}{
		{name: "preset plus group", text: "default,sandbox", want: "default,sandbox"},
		{name: "case and spaces", text: " Per_Rollout , JOB ", want: "per_rollout,job"},
		// G1c refuses an unknown name: Gym's own message, and what it means.
		{name: "typo", text: "defualt", errHas: []string{"Unknown span group or preset: 'defualt'. Valid options: ['agent', 'all',",
			"switches telemetry off in every process", "'per_rollout'", `did you mean "default"?`}},
		{name: "blank is default", text: "   ", want: "default"},
	}
	reg := testRegistry()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder(t)
			b.capture(t, 2, false)
			m := newTestModel(t, b, 120, 40, "default")
			m = keys(t, m, ":")
			if !m.groups.Inputting() {
				t.Fatal(": did not open the spec input")
			}
			// Typing replaces the prefilled spec.
			m = typeText(t, m, tc.text)
			m = keys(t, m, "enter")
			if tc.want == "" {
				if !m.groups.Inputting() {
					t.Fatalf("input closed after bad spec %q", tc.text)
				}
				for _, s := range tc.errHas {
					if !strings.Contains(m.groups.inputErr, s) {
						t.Errorf("error %q lacks %q", m.groups.inputErr, s)
					}
				}
				m = keys(t, m, "esc")
				if m.groups.Inputting() || m.groups.Preview() != m.opts.Current {
					t.Errorf("esc left the input open or changed the spec")
				}
				return
			}
			want, _ := reg.Parse(tc.want)
			if m.groups.Preview() != want {
				t.Errorf("spec %q gave %s, want %s", tc.text, reg.Format(m.groups.Preview()), tc.want)
			}
		})
	}
}

func TestCopyOut(t *testing.T) {
	b := newBuilder(t)
	b.capture(t, 2, false)
	m := newTestModel(t, b, 120, 40, "default")
	if m.Snippet() != "" {
		t.Fatalf("snippet before any change: %q", m.Snippet())
	}
	m = keys(t, m, "2", "y")
	data, err := os.ReadFile(m.opts.SnippetPath)
	if err != nil {
		t.Fatalf("copy-out file: %v", err)
	}
	for _, s := range []string{"telemetry:\n  enabled: true\n  span_groups: \"per_rollout\"\n", "# NEMO_GYM_OTEL_SPAN_GROUPS=per_rollout\n"} {
		if !strings.Contains(string(data), s) {
			t.Errorf("file lacks %q:\n%s", s, data)
		}
	}
	if !strings.Contains(m.status, m.opts.SnippetPath) || !strings.Contains(m.status, "NEMO_GYM_OTEL_SPAN_GROUPS=per_rollout") || !strings.Contains(m.View(), "clipboard not set (no terminal) · wrote ") || strings.Contains(m.View(), "copied") {
		t.Errorf("status %q does not show the path and env line", m.status)
	}
	if s := m.Snippet(); !strings.Contains(s, "\nNEMO_GYM_OTEL_SPAN_GROUPS=per_rollout\n") {
		t.Errorf("exit snippet = %q", s)
	}
}

// TestCopyOutWarnsOfSplits copies out a spec that breaks every join: it is
// handed out (the user may mean it), but the status says so first, in the
// error style, and the file and the exit text carry the warning; a spec
// that joins carries none.
func TestCopyOutWarnsOfSplits(t *testing.T) {
	b := newBuilder(t)
	b.capture(t, 4, false)
	m := newTestModel(t, b, 80, 24, "default")
	m = keys(t, m, ":")
	m = typeText(t, m, "server,rollout,verify")
	m = keys(t, m, "enter", "y")
	const warn = "this spec splits 4 of 4 rollouts: the spec lacks http_client"
	if !m.statusErr || !strings.HasPrefix(m.status, glyphSplit+" this spec splits 4 of 4 rollouts · ") {
		t.Errorf("status %q (error %v), want it to start with the warning", m.status, m.statusErr)
	}
	if !strings.Contains(m.View(), glyphSplit+" this spec splits 4 of 4") {
		t.Errorf("the 80-column footer cuts the warning:\n%s", m.View())
	}
	data, err := os.ReadFile(m.opts.SnippetPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(data), "# warning: "+warn) || !strings.Contains(string(data), `span_groups: "server,rollout,verify"`) {
		t.Errorf("file:\n%s\nwant the warning first, then the spec", data)
	}
	if s := m.Snippet(); !strings.HasPrefix(s, "# warning: "+warn) {
		t.Errorf("exit snippet lacks the warning:\n%s", s)
	}

	m = keys(t, m, "2", "y")
	if m.statusErr || strings.Contains(m.status, "splits") {
		t.Errorf("a joining spec copied with status %q (error %v)", m.status, m.statusErr)
	}
	if data, _ := os.ReadFile(m.opts.SnippetPath); strings.Contains(string(data), "warning") {
		t.Errorf("a joining spec's file has a warning:\n%s", data)
	}
}

func TestCopyOutOSC52(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "tty")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMUX", "")
	msg := copySnippet("hello", t.TempDir()+"/s.yaml", "", f, "")().(copiedMsg)
	if !msg.clip || msg.errText != "" {
		t.Fatalf("copied = %+v", msg)
	}
	got, _ := os.ReadFile(f.Name())
	if want := "\x1b]52;c;aGVsbG8=\a"; string(got) != want {
		t.Errorf("OSC 52 = %q, want %q", got, want)
	}
	bad := copySnippet("x", t.TempDir()+"/missing/dir/s.yaml", "", nil, "")().(copiedMsg)
	if !strings.Contains(bad.errText, "no such file or directory") || strings.Contains(bad.errText, "open ") {
		t.Errorf("error text %q should be the cause only", bad.errText)
	}
}

// A preview result for a spec that is no longer previewed is dropped.
func TestStaleAnalysisDropped(t *testing.T) {
	b := newBuilder(t)
	b.capture(t, 2, false)
	m := newTestModel(t, b, 120, 40, "default")
	before := m.groups.prevRep
	stale := &whatif.Report{Spec: 12345}
	next, cmd := m.Update(analysisMsg{seq: m.snap.Seq, current: m.opts.Current, preview: 12345, prev: stale})
	m = next.(Model)
	if m.groups.prevRep != before {
		t.Errorf("stale preview installed")
	}
	if cmd == nil || !m.analysing {
		t.Fatalf("stale result did not start a recompute")
	}
	if a, ok := cmd().(analysisMsg); !ok || a.preview != m.groups.Preview() {
		t.Errorf("recompute is for %v, want the previewed spec", a.preview)
	}
}

func TestTreeExpandCollapse(t *testing.T) {
	b := newBuilder(t)
	b.capture(t, 1, false)
	m := newTestModel(t, b, 120, 40, "all")
	m = keys(t, m, "tab")
	full := len(m.trace.rows)
	if full != 11 {
		t.Fatalf("%d rows, want 11", full)
	}
	m = keys(t, m, "down", "enter") // collapse POST /run
	if got := len(m.trace.rows); got != 2 {
		t.Errorf("after collapsing POST /run: %d rows, want 2", got)
	}
	m = keys(t, m, "e")
	if got := len(m.trace.rows); got != full {
		t.Errorf("after e: %d rows, want %d", got, full)
	}
	m = keys(t, m, "E")
	if got := len(m.trace.rows); got != 1 {
		t.Errorf("after E: %d rows, want 1", got)
	}
	m = keys(t, m, "e", "G", "enter") // enter on a leaf opens the detail
	if !m.detail.isOpen() || !strings.Contains(m.View(), "span id") {
		t.Errorf("enter on a leaf did not open the detail")
	}
	m = keys(t, m, "esc")
	if m.detail.isOpen() {
		t.Errorf("esc did not close the detail")
	}
}

func TestMouse(t *testing.T) {
	b := newBuilder(t)
	b.capture(t, 6, false)
	m := newTestModel(t, b, 120, 40, "default")
	r := m.rects[slotRollouts]
	// Row 0 is at y = top border + title + column header.
	click := tea.MouseMsg{X: r.x + 3, Y: r.y + 1 + 2 + 4, Button: tea.MouseButtonLeft, Action: tea.MouseActionPress}
	m = send(t, m, click)
	if got := m.rollouts.Selected().ID; got != "r0004" {
		t.Errorf("click selected %s, want r0004", got)
	}
	tr := m.trace.Rollout()
	if tr == nil || tr.ID != "r0004" {
		t.Errorf("trace did not follow the click")
	}
	g := m.rects[slotGroups]
	m = send(t, m, tea.MouseMsg{X: g.x + 5, Y: g.y + 3, Button: tea.MouseButtonWheelDown, Action: tea.MouseActionPress})
	if m.groups.offset == 0 {
		t.Errorf("wheel over the groups panel did not scroll it")
	}
	if m.rollouts.Selected().ID != "r0004" {
		t.Errorf("wheel elsewhere moved the rollout cursor")
	}
}

func TestResizeStacksPanels(t *testing.T) {
	b := newBuilder(t)
	b.capture(t, 2, false)
	m := newTestModel(t, b, 120, 40, "default")
	if m.rects[slotRollouts].y != m.rects[slotTrace].y {
		t.Errorf("wide layout should put rollouts and trace side by side: %+v", m.rects)
	}
	m = send(t, m, tea.WindowSizeMsg{Width: 70, Height: 30})
	if !(m.rects[slotRollouts].y < m.rects[slotTrace].y && m.rects[slotTrace].y < m.rects[slotGroups].y) {
		t.Errorf("narrow layout should stack: %+v", m.rects)
	}
	if got := strings.Count(m.View(), "\n") + 1; got != 30 {
		t.Errorf("view has %d lines at height 30", got)
	}
	m = send(t, m, tea.WindowSizeMsg{Width: 20, Height: 5})
	if !strings.Contains(m.View(), "too small") {
		t.Errorf("tiny terminal not reported")
	}
}

func TestNoColor(t *testing.T) {
	render := func(noColor bool) string {
		t.Setenv("TERM", "xterm-256color")
		t.Setenv("COLORTERM", "truecolor")
		if noColor {
			t.Setenv("NO_COLOR", "1")
		} else {
			os.Unsetenv("NO_COLOR")
		}
		r := lipgloss.NewRenderer(&bytes.Buffer{}, termenv.WithTTY(true))
		st := DefaultStyles(r)
		return st.Join.Split.Render("✗ split") + st.Panel.Focused.Render("x")
	}
	if got := render(true); strings.Contains(got, "\x1b[") {
		t.Errorf("NO_COLOR output has escape codes: %q", got)
	}
	if got := render(false); !strings.Contains(got, "\x1b[") {
		t.Errorf("colour output has no escape codes: %q", got)
	}
}

func TestSelfTimes(t *testing.T) {
	ms := int64(time.Millisecond)
	sp := func(start, end int64, parent int32) model.Span {
		return model.Span{Start: start * ms, End: end * ms, Parent: parent}
	}
	tests := []struct {
		name  string
		spans []model.Span
		want  []int64
	}{
		{"leaf", []model.Span{sp(0, 10, -1)}, []int64{10}},
		{"two children", []model.Span{sp(0, 10, -1), sp(1, 3, 0), sp(5, 8, 0)}, []int64{5, 2, 3}},
		{"overlapping children", []model.Span{sp(0, 10, -1), sp(1, 6, 0), sp(4, 8, 0)}, []int64{3, 5, 4}},
		{"child past parent end", []model.Span{sp(0, 10, -1), sp(8, 15, 0)}, []int64{8, 7}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := selfTimes(&model.Fragment{Spans: tc.spans})
			for i := range got {
				got[i] /= ms
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("selfTimes = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestQuit(t *testing.T) {
	b := newBuilder(t)
	b.capture(t, 1, false)
	m := newTestModel(t, b, 80, 24, "default")
	for _, k := range []string{"q", "ctrl+c"} {
		_, cmd := m.Update(keyMsg(k))
		if cmd == nil {
			t.Fatalf("%s returned no command", k)
		}
		if _, ok := cmd().(tea.QuitMsg); !ok {
			t.Errorf("%s did not quit", k)
		}
	}
	// While typing a filter, q is text, not quit.
	m = keys(t, m, "/", "q")
	if m.rollouts.filter != "q" {
		t.Errorf("q while filtering: filter %q", m.rollouts.filter)
	}
}

// Keys read in one burst arrive as one message; each still acts.
func TestKeyBurst(t *testing.T) {
	b := newBuilder(t)
	b.capture(t, 3, false)
	m := newTestModel(t, b, 120, 40, "all")
	m = send(t, m, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("2jj")})
	want, _ := testRegistry().PresetSet("per_rollout")
	if m.groups.Preview() != want {
		t.Errorf("burst 2jj: preview %s, want per_rollout", testRegistry().Format(m.groups.Preview()))
	}
	if got := m.rollouts.Selected().ID; got != "r0002" {
		t.Errorf("burst 2jj: cursor on %s, want r0002", got)
	}
}

// A span id typed in the rollout filter selects its rollout and, on enter,
// puts the waterfall's cursor on that span, expanding what hides it.
func TestFilterSpanIDJumps(t *testing.T) {
	b := newBuilder(t)
	b.capture(t, 6, false)
	m := newTestModel(t, b, 120, 40, "default")
	m = keys(t, m, "tab", "E", "shift+tab") // everything collapsed
	var want model.SpanID
	for _, r := range m.snap.Rollouts {
		if r.ID == "r0004" {
			f := r.Fragments[0]
			for i := range f.Spans {
				if m.snap.Str(f.Spans[i].Name) == "gym.verify" {
					want = f.Spans[i].SpanID
				}
			}
		}
	}
	m = keys(t, m, "/")
	m = typeText(t, m, want.String())
	m = keys(t, m, "enter")
	if got := m.rollouts.Selected().ID; got != "r0004" {
		t.Fatalf("span id selected %s, want r0004", got)
	}
	f, i, ok := m.trace.SelectedSpan()
	if !ok || f.Spans[i].SpanID != want || m.focus != slotTrace {
		t.Errorf("cursor not on the span (ok %v, focus %v)", ok, m.focus)
	}
}

// / in the waterfall searches the rollout's spans; n and N step through the
// hits, f to the failed span.
func TestSpanSearch(t *testing.T) {
	b := newBuilder(t)
	b.capture(t, 6, false)
	m := newTestModel(t, b, 120, 40, "default")
	m = keys(t, m, "down", "down", "tab", "/") // r0002: three model turns
	if !m.trace.search.typing || m.rollouts.filtering {
		t.Fatalf("/ in the waterfall did not open the span search")
	}
	m = typeText(t, m, "gym.model")
	m = keys(t, m, "enter")
	name := func() string {
		f, i, ok := m.trace.SelectedSpan()
		if !ok {
			return ""
		}
		return m.snap.Str(f.Spans[i].Name)
	}
	if len(m.trace.search.hits) != 3 || name() != "gym.model.responses" {
		t.Fatalf("hits %d, cursor on %q", len(m.trace.search.hits), name())
	}
	seen := map[int]bool{m.trace.cursor: true}
	for range 2 {
		m = keys(t, m, "n")
		seen[m.trace.cursor] = true
		if name() != "gym.model.responses" {
			t.Errorf("n moved to %q", name())
		}
	}
	if len(seen) != 3 || !strings.Contains(m.View(), "/gym.model 3/3") {
		t.Errorf("n visited %d rows; view:\n%s", len(seen), m.View())
	}
	m = keys(t, m, "n")
	if m.trace.search.at != 0 {
		t.Errorf("n past the last hit is at %d, want the first", m.trace.search.at)
	}
	m = keys(t, m, "N")
	if m.trace.search.at != 2 {
		t.Errorf("N from the first hit is at %d, want the last", m.trace.search.at)
	}
	// An attribute value: the url of the verify call.
	m = keys(t, m, "/")
	m.trace.search.input.SetValue("")
	m = typeText(t, m, "/verify")
	if name() != "HTTP POST" && name() != "POST /verify" {
		t.Errorf("attribute search on %q", name())
	}
	m = keys(t, m, "esc", "shift+tab", "G", "tab", "E", "f") // r0005 fails
	if m.rollouts.Selected().ID != "r0005" {
		t.Fatalf("on %s", m.rollouts.Selected().ID)
	}
	if f, i, ok := m.trace.SelectedSpan(); !ok || f.Spans[i].Status != model.StatusError {
		t.Errorf("f did not reach the failed span")
	}
}

// The waterfall's search reads the rollout filter's terms on each span, as
// the rollout filter does on the rollout: a failed rollout's error span is
// found by status=error, kinds and attribute comparisons hold per span, and
// a term half typed says why instead of matching nothing silently.
func TestSpanSearchTerms(t *testing.T) {
	b := newBuilder(t)
	b.capture(t, 6, false)
	m := newTestModel(t, b, 80, 24, "default")
	m = keys(t, m, "down", "tab") // r0001 fails its verify
	search := func(q string) []string {
		t.Helper()
		m = keys(t, m, "/")
		m.trace.search.input.SetValue("")
		m = typeText(t, m, q)
		m = keys(t, m, "enter")
		var names []string
		for _, h := range m.trace.search.hits {
			names = append(names, m.snap.Str(m.trace.r.Fragments[h.frag].Spans[h.idx].Name))
		}
		return names
	}
	for _, tc := range []struct {
		q    string
		want []string
	}{
		{"status=error", []string{"gym.verify"}},
		{"error", []string{"gym.verify"}},
		{"kind=server service=example_tools", []string{"POST /verify"}},
		{"http.request.method=POST url.full~verify", []string{"HTTP POST"}},
		{"-kind=internal -kind=client name~verify", []string{"POST /verify"}},
		{"dur>10s", nil},
		{"verifier rejected", []string{"gym.verify"}}, // the status message, word by word
	} {
		if got := search(tc.q); !slices.Equal(got, tc.want) {
			t.Errorf("/%s hits %q, want %q", tc.q, got, tc.want)
		}
	}
	if got := search("status=error"); len(got) == 1 {
		if f, i, ok := m.trace.SelectedSpan(); !ok || f.Spans[i].Status != model.StatusError {
			t.Errorf("/status=error left the cursor off the error span")
		}
		if v := m.View(); !strings.Contains(v, "/status=error 1/1") {
			t.Errorf("the 80×24 title lacks the hit count:\n%s", v)
		}
	}
	search("dur>1")
	if !strings.Contains(m.trace.search.status(), "no match · bad duration") {
		t.Errorf("a half-typed term says %q", m.trace.search.status())
	}
}

// The spec input opens with the previewed spec; typing replaces it, while a
// movement key first keeps it for editing.
func TestSpecInputPrefill(t *testing.T) {
	b := newBuilder(t)
	b.capture(t, 2, false)
	m := newTestModel(t, b, 120, 40, "default")
	m = keys(t, m, ":")
	if v := m.groups.input.Value(); v != "default" {
		t.Fatalf("prefilled %q, want default", v)
	}
	m = typeText(t, m, "all")
	if v := m.groups.input.Value(); v != "all" {
		t.Errorf("typing gave %q, want all (replaced)", v)
	}
	m = keys(t, m, "esc", ":", "end")
	m = typeText(t, m, ",job")
	if v := m.groups.input.Value(); v != "default,job" {
		t.Errorf("editing after a movement key gave %q, want default,job", v)
	}
}

func TestFmtDur(t *testing.T) {
	for ns, want := range map[int64]string{0: "0", 420: "420ns", 2500: "2.5µs", 3000: "3µs", 850_000: "850µs", 12_300_000: "12.3ms"} {
		if got := fmtDur(ns); got != want {
			t.Errorf("fmtDur(%d) = %q, want %q", ns, got, want)
		}
	}
}

// The live rate moves with each batch and falls to 0 once spans stop: an
// exporter sends a batch every five seconds, and no frame after a batch
// arrived reads 0 spans/s; once none comes for the window, it does.
func TestLiveRate(t *testing.T) {
	start := t0
	now := start
	st := model.NewStore(model.Options{Now: func() time.Time { return now }})
	t.Cleanup(st.Close)
	b := &builder{st: st, l: model.NewLocal(st.Interner()), res: map[string]model.ResourceID{}}
	reg := testRegistry()
	cur, _ := reg.Parse("default")
	m := New(Options{Source: st, Registry: reg, Current: cur, Live: true, Title: "gymtrace serve",
		SnippetPath: filepath.Join(t.TempDir(), SnippetFile), Now: func() time.Time { return now }})
	m = send(t, m, tea.WindowSizeMsg{Width: 120, Height: 40})
	shown := func() string {
		return regexp.MustCompile(`live (\S+) spans/s`).FindStringSubmatch(m.header)[1]
	}
	// Batches of 900 at 0.5 s, 5.5 s, 10.5 s; clock ticks every second.
	for tick := 0; tick <= 20; tick++ {
		now = start.Add(time.Duration(tick) * time.Second)
		if tick%5 == 0 && tick <= 10 {
			now = now.Add(500 * time.Millisecond)
			var spans model.Batch
			for i := range 900 {
				spans.Append(traceID(tick*1000+i), model.SpanID{}, model.Span{SpanID: b.id(), Name: b.str("GET /health"),
					Resource: b.resource("policy_model"), Kind: model.KindServer, Start: now.UnixNano(), End: now.UnixNano() + 1000})
			}
			if err := st.Add(spans); err != nil {
				t.Fatal(err)
			}
			st.Sync()
			// The header follows the batch's analysis, with the list.
			m = send(t, m, snapshotMsg{snap: st.Snapshot()})
			if got := shown(); got == "0" {
				t.Errorf("at %s, the frame after 900 spans arrived reads live 0 spans/s", now.Sub(start))
			}
			now = now.Add(-500 * time.Millisecond)
		}
		next, _ := m.Update(clockMsg{})
		m = next.(Model)
		if tick > 5 && tick <= 10 {
			if got := shown(); got != "180" {
				t.Errorf("at %ds, with a batch of 900 every 5 s, live %s spans/s, want 180", tick, got)
			}
		}
	}
	if got := shown(); got != "0" {
		t.Errorf("10 s after the last batch, live %s spans/s, want 0", got)
	}
}

// A snippet file the run did not write is kept as .bak, and the status says
// so; the run's own file is replaced quietly. Without a terminal the status
// says the clipboard was not set.
func TestCopyOutKeepsOtherFile(t *testing.T) {
	b := newBuilder(t)
	b.capture(t, 2, false)
	m := newTestModel(t, b, 120, 40, "default")
	if err := os.WriteFile(m.opts.SnippetPath, []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m = keys(t, m, "2", "y")
	if bak, err := os.ReadFile(m.opts.SnippetPath + ".bak"); err != nil || string(bak) != "mine\n" {
		t.Fatalf("the earlier file was not kept: %q, %v", bak, err)
	}
	for _, want := range []string{"replaced the earlier ", "(kept as ", "clipboard not set (no terminal)"} {
		if !strings.Contains(m.status, want) {
			t.Errorf("status %q lacks %q", m.status, want)
		}
	}
	m = keys(t, m, "3", "y")
	if !strings.Contains(m.status, "wrote ") || strings.Contains(m.status, "replaced") {
		t.Errorf("second copy: status %q", m.status)
	}
	if bak, _ := os.ReadFile(m.opts.SnippetPath + ".bak"); string(bak) != "mine\n" {
		t.Errorf("the run's own file was backed up over the user's: %q", bak)
	}
}

// The detail view shows an exception's whole stack trace and scrolls to it.
func TestDetailFullStackTrace(t *testing.T) {
	b := newBuilder(t)
	var frames []string
	for i := 0; i < 30; i++ {
		frames = append(frames, fmt.Sprintf(`  File "gym/f%02d.py", line %d, in step`, i, i+1))
	}
	stack := "Traceback (most recent call last):\n" + strings.Join(frames, "\n") + "\nValueError: bad"
	tree := rolloutTree("r0000", 1, true)
	var setStack func(n *node)
	setStack = func(n *node) {
		if n.err != "" {
			n.stack = stack
		}
		for i := range n.kids {
			setStack(&n.kids[i])
		}
	}
	setStack(&tree)
	spans, _ := b.emit(model.Batch{}, traceID(1), model.SpanID{}, t0.UnixNano(), tree)
	if err := b.st.Add(spans); err != nil {
		t.Fatal(err)
	}
	b.st.Sync()
	m := newTestModel(t, b, 120, 40, "all")
	m = keys(t, m, "tab", "f", "d")
	if !m.detail.isOpen() {
		t.Fatal("d did not open the detail")
	}
	all := strings.Join(m.detail.lines, "\n")
	for _, f := range frames {
		if !strings.Contains(all, strings.TrimSpace(f)) {
			t.Fatalf("stack trace lacks %q", f)
		}
	}
	m = keys(t, m, "G")
	if v := m.View(); !strings.Contains(v, "ValueError: bad") || !strings.Contains(v, "f29.py") {
		t.Errorf("the end of the stack trace is not reachable:\n%s", v)
	}
}

// TestCopyRefused: y never hands out a spec Gym would not apply as meant;
// with every group unchecked there is none (Gym reads blank as default).
func TestCopyRefused(t *testing.T) {
	b := newBuilder(t)
	b.capture(t, 2, false)
	m := newTestModel(t, b, 120, 40, "server")
	m.groups.SetPreview(0)
	m = keys(t, m, "y")
	if !m.statusErr || !strings.Contains(m.status, "not copied: no group selected: Gym reads a blank span_groups as default") {
		t.Errorf("status %q (error %v), want the refusal", m.status, m.statusErr)
	}
	if _, err := os.Stat(m.opts.SnippetPath); !os.IsNotExist(err) {
		t.Errorf("a refused copy wrote %s (%v)", m.opts.SnippetPath, err)
	}
	if s := m.Snippet(); !strings.HasPrefix(s, "# no span_groups snippet: no group selected") {
		t.Errorf("exit snippet %q", s)
	}
}

func TestHeaderNamesVariant(t *testing.T) {
	b := newBuilder(t)
	b.capture(t, 2, false)
	m := newTestModel(t, b, 160, 40, "default")
	m.opts.Variant = "Gym G1 (resource nemo.gym.version=0.5.1)"
	m = send(t, m, tea.WindowSizeMsg{Width: 160, Height: 40})
	if v := m.View(); !strings.Contains(strings.SplitN(v, "\n", 2)[0], "Gym G1 (resource nemo.gym.version=0.5.1)") {
		t.Errorf("header lacks the variant:\n%s", strings.SplitN(v, "\n", 2)[0])
	}
}

// TestHeaderKeepsSpecAndVariant opens four long log paths, as `open` is
// usually given them: the header names the files and keeps the current spec
// and the variant at every width; the paths' directory gives way first.
func TestHeaderKeepsSpecAndVariant(t *testing.T) {
	b := newBuilder(t)
	b.capture(t, 2, false)
	dir := "/home/someone/experiments/2026-03-01/run-17/nemo-gym/logs"
	title := "gymtrace open " + dir + "/driver.log.gz " + dir + "/agent.log.gz " + dir + "/model.log.gz " + dir + "/resources.log.gz"
	for _, w := range []int{80, 120, 200} {
		reg := testRegistry()
		cur, _ := reg.Parse("default")
		m := New(Options{Source: b.st, Registry: reg, Current: cur, CurrentSpec: "default", Title: title,
			Variant:     "Gym G1c (resource nemo.gym.version=0.5.1 and the concurrency metric)",
			SnippetPath: filepath.Join(t.TempDir(), SnippetFile)})
		m.refresh = time.Nanosecond
		m = send(t, m, tea.WindowSizeMsg{Width: w, Height: 24})
		m = run(t, m, m.Init())
		l1 := strings.Split(m.View(), "\n")[0]
		for _, want := range []string{"open driver.log.gz", "current default", "Gym G1c"} {
			if !strings.Contains(l1, want) {
				t.Errorf("%d columns: header %q lacks %q", w, l1, want)
			}
		}
		if ansi.StringWidth(l1) > w {
			t.Errorf("%d columns: header is %d wide", w, ansi.StringWidth(l1))
		}
		if w == 200 && !strings.Contains(l1, "resources.log.gz (in /home/") {
			t.Errorf("200 columns: header %q lacks every file and their directory", l1)
		}
	}
}

// TestFilterErrorWhole types a filter term with a bad value: the narrow
// list shows the error whole, ending with the values it takes, as the CLI
// prints them.
func TestFilterErrorWhole(t *testing.T) {
	for _, sz := range [][2]int{{80, 24}, {120, 40}, {200, 50}} {
		b := newBuilder(t)
		b.capture(t, 3, false)
		m := newTestModel(t, b, sz[0], sz[1], "default")
		m = keys(t, m, "/")
		m = typeText(t, m, "kind=foo")
		view := m.rollouts.view()
		flat := strings.Join(strings.Fields(ansi.Strip(view)), " ")
		const want = `filter "kind=foo": unknown kind "foo" (want server, client, internal, producer, consumer or unspecified)`
		if !strings.Contains(flat, want) {
			t.Errorf("%dx%d: the list lacks %q:\n%s", sz[0], sz[1], want, view)
		}
		if got := len(strings.Split(view, "\n")); got != m.rollouts.height {
			t.Errorf("%dx%d: list is %d lines, want %d", sz[0], sz[1], got, m.rollouts.height)
		}
	}
}

// TestTwoTraceCounts: the header's count is of trace ids captured, the span
// groups' of traces each spec would send; both say which, and the help
// says how they differ.
func TestTwoTraceCounts(t *testing.T) {
	b := newBuilder(t)
	b.capture(t, 6, true) // one trace for the run, under gym.job
	m := newTestModel(t, b, 120, 40, "default")
	m = keys(t, m, "shift+tab", " ") // job off: a trace per rollout
	v := ansi.Strip(m.View())
	if !strings.Contains(v, "captured trace ids 1 ") || !regexp.MustCompile(`traces sent\s+1\s+6\s`).MatchString(v) {
		t.Errorf("the two counts are not told apart:\n%s", v)
	}
	m = keys(t, m, "?")
	v = ansi.Strip(m.View())
	for _, want := range []string{"header: distinct trace ids captured", "span groups: traces each spec would send"} {
		if !strings.Contains(v, want) {
			t.Errorf("help lacks %q", want)
		}
	}
}

// TestGroupsSayWhatIsHidden: the span groups panel, like the others, says
// which of its lines show when not all fit, and the cue follows scrolling.
func TestGroupsSayWhatIsHidden(t *testing.T) {
	b := newBuilder(t)
	b.capture(t, 4, false)
	m := newTestModel(t, b, 120, 40, "default")
	cue := regexp.MustCompile(`Span groups · preview default · (\d+)–(\d+) of (\d+)`)
	got := cue.FindStringSubmatch(m.groups.view())
	if got == nil || got[1] != "1" {
		t.Fatalf("no 1–N of M cue:\n%s", m.groups.view())
	}
	m = keys(t, m, "shift+tab", "pgdown")
	if after := cue.FindStringSubmatch(m.groups.view()); after == nil || after[1] == "1" || after[3] != got[3] {
		t.Errorf("after pgdn the cue reads %v, before %v", after, got)
	}
}

// TestGroupsFollowTheFilter: the span groups preview the rollouts the list
// shows, as preview --where does, and say so; clearing the filter brings
// back the whole capture.
func TestGroupsFollowTheFilter(t *testing.T) {
	b := newBuilder(t)
	b.capture(t, 6, false)
	m := newTestModel(t, b, 120, 40, "default")
	all := m.groups.prevRep.Result.Spans
	m = keys(t, m, "/")
	m = typeText(t, m, "status=error")
	m = keys(t, m, "enter")
	f, _ := filter.Parse("status=error")
	want := whatif.NewEngine(m.reg).Preview(whatif.NewEngine(m.reg).Select(m.snap, f), m.groups.Preview())
	if got := m.groups.prevRep; got.Input.Rollouts != 2 || got.Result.Spans != want.Result.Spans || got.Result.Spans >= all {
		t.Errorf("filtered preview: %d rollouts, %d spans; preview --where: %d rollouts, %d spans (all: %d)",
			got.Input.Rollouts, got.Result.Spans, want.Input.Rollouts, want.Result.Spans, all)
	}
	if v := ansi.Strip(m.groups.view()); !strings.Contains(v, "Span groups · preview default · over 2 rollouts /status=error") {
		t.Errorf("the groups panel does not say it follows the filter:\n%s", v)
	}
	if m.groups.curRep.Input.Rollouts != 2 {
		t.Errorf("the current spec's column covers %d rollouts, want the 2 listed", m.groups.curRep.Input.Rollouts)
	}
	m = keys(t, m, "esc")
	if m.groups.prevRep.Result.Spans != all || strings.Contains(m.groups.view(), "over ") {
		t.Errorf("after esc the preview has %d spans, want %d:\n%s", m.groups.prevRep.Result.Spans, all, m.groups.view())
	}
}

// Past matchAsyncFrom rollouts the filter judges them off the UI
// goroutine: the rows stay as they were until its verdicts come, then are
// the same as judged in place.
func TestFilterOffUIGoroutine(t *testing.T) {
	defer func(n int) { matchAsyncFrom = n }(matchAsyncFrom)
	for _, filter := range []string{"r0003", "ERROR", "status=error name=gym.verify", "-status=error", "sandbox"} {
		b := newBuilder(t)
		b.capture(t, 6, false)
		matchAsyncFrom = 1 << 30
		want := ids(typeText(t, keys(t, newTestModel(t, b, 120, 40, "default"), "/"), filter).rollouts.rows)
		matchAsyncFrom = 0
		m := keys(t, newTestModel(t, b, 120, 40, "default"), "/")
		m = typeText(t, m, filter[:len(filter)-1])
		before := ids(m.rollouts.rows)
		next, cmd := m.Update(keyMsg(filter[len(filter)-1:]))
		m = next.(Model)
		if got := ids(m.rollouts.rows); !slices.Equal(got, before) || !strings.Contains(m.View(), "filtering…") {
			t.Errorf("filter %q before its verdicts: rows %v, want %v, and filtering… said", filter, got, before)
		}
		m = run(t, m, cmd)
		if got := ids(m.rollouts.rows); !slices.Equal(got, want) {
			t.Errorf("filter %q judged off the UI goroutine = %v, want %v", filter, got, want)
		}
		if strings.Contains(m.View(), "filtering…") {
			t.Errorf("filter %q: filtering… still said", filter)
		}
	}
}

// probePanel is a panel of its own file's kind: it requests work after a
// change and takes its own results, with nothing in the root naming it.
type probePanel struct {
	basePanel
	asked, got int
	pending    bool
	of         *model.Rollout // the selection the last request was for
}

type probeMsg struct{ n int }

func (p *probePanel) slot() slot                              { return slotGroups }
func (p *probePanel) name() string                            { return "probe" }
func (p *probePanel) setSize(int, int)                        {}
func (p *probePanel) handle(tea.KeyMsg, *env) (bool, tea.Cmd) { return false, nil }
func (p *probePanel) view() string                            { return "" }
func (p *probePanel) request(e *env) tea.Cmd {
	if p.pending || e.snap == nil || e.rollout == p.of {
		return nil
	}
	p.pending, p.asked, p.of = true, p.asked+1, e.rollout
	return func() tea.Msg { return probeMsg{p.asked} }
}
func (p *probePanel) update(msg tea.Msg) bool {
	m, ok := msg.(probeMsg)
	if ok {
		p.pending, p.got = false, m.n
	}
	return ok
}

// A panel added as one entry in Model.panels gets its requests asked and
// its own messages whatever the focus.
func TestPanelOwnsItsMessages(t *testing.T) {
	b := newBuilder(t)
	b.capture(t, 3, false)
	m := newTestModel(t, b, 120, 40, "default")
	p := &probePanel{}
	m.panels = append(m.panels, p)
	m = keys(t, m, "j") // the rollout list has focus
	if p.asked == 0 || p.got != p.asked {
		t.Errorf("probe asked %d times, got result %d", p.asked, p.got)
	}
	before := p.asked
	m = keys(t, m, "j")
	if p.asked <= before || p.got != p.asked {
		t.Errorf("after another selection: asked %d (was %d), got %d", p.asked, before, p.got)
	}
	m = keys(t, m, "tab") // the waterfall has focus: the message still reaches it
	m = send(t, m, probeMsg{99})
	if p.got != 99 {
		t.Errorf("a message while another panel has focus: got %d", p.got)
	}
	// A preset key previews the preset its binding carries.
	m = keys(t, m, "2")
	if want, _ := m.reg.PresetSet("per_rollout"); m.groups.Preview() != want {
		t.Errorf("2 previews %s, want per_rollout", m.reg.Format(m.groups.Preview()))
	}
}
