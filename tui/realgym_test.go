package tui

import (
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/muesli/termenv"
	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gate/whatif"
	"github.com/nemo-gym/gymtrace/internal/golden"
	"github.com/nemo-gym/gymtrace/model"
	"github.com/nemo-gym/gymtrace/receiver"
)

// realGym holds captures of NeMo Gym's real telemetry code.
const realGym = "../testdata/real-gym/"

// realFiles returns the console logs of a real-Gym capture.
func realFiles(tb testing.TB, name string) []string {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join(realGym, name, "console", "*.log.gz"))
	if len(files) == 0 {
		files, err = filepath.Glob(filepath.Join(realGym, name, "otlp", "*.jsonl.gz"))
	}
	if err != nil || len(files) == 0 {
		tb.Fatalf("no console logs under %s: %v", name, err)
	}
	return files
}

// realModel opens a real-Gym capture as gymtrace open does: the variant
// the capture shows, sized w×h.
func realModel(tb testing.TB, name string, w, h int, current string) Model {
	tb.Helper()
	return realModelWith(tb, name, w, h, current, nil)
}

// realModelWith is realModel with its options changed by with first.
func realModelWith(tb testing.TB, name string, w, h int, current string, with func(*Options)) Model {
	tb.Helper()
	st := model.NewStore(model.Options{})
	tb.Cleanup(st.Close)
	if _, err := receiver.ReadFiles(st, realFiles(tb, name), receiver.ReadOptions{}); err != nil {
		tb.Fatal(err)
	}
	st.Sync()
	v, _ := groups.DetectVariant(st.Snapshot())
	reg := v.Registry()
	cur, err := reg.Parse(current)
	if err != nil {
		tb.Fatalf("parse %q: %v", current, err)
	}
	o := Options{Source: st, Registry: reg, Current: cur, CurrentSpec: current, Title: name,
		SnippetPath: filepath.Join(tb.TempDir(), SnippetFile)}
	if with != nil {
		with(&o)
	}
	m := New(o)
	m.refresh = time.Nanosecond
	m = send(tb, m, tea.WindowSizeMsg{Width: w, Height: h})
	return run(tb, m, m.Init())
}

var (
	cliOnce sync.Once
	cliBin  string
	cliErr  string
)

// cli builds the real gymtrace binary once per test run.
func cli(tb testing.TB) string {
	tb.Helper()
	cliOnce.Do(func() {
		dir, err := exec.Command("mktemp", "-d").Output()
		if err != nil {
			cliErr = err.Error()
			return
		}
		cliBin = filepath.Join(strings.TrimSpace(string(dir)), "gymtrace")
		if out, err := exec.Command("go", "build", "-o", cliBin, "github.com/nemo-gym/gymtrace/cmd/gymtrace").CombinedOutput(); err != nil {
			cliErr = err.Error() + "\n" + string(out)
		}
	})
	if cliErr != "" {
		tb.Fatalf("go build: %s", cliErr)
	}
	return cliBin
}

// listed returns the rollouts the list shows, run-level rows left out.
func listed(m Model) []string {
	var ids []string
	for _, r := range m.rollouts.rows {
		if !isApart(r.ID) {
			ids = append(ids, r.ID)
		}
	}
	slices.Sort(ids)
	return ids
}

// The rollout filter typed in the TUI and --where on the command line select
// the same rollouts of a real capture, for every kind of term.
func TestRealGymFilterSameAsWhere(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := cli(t)
	filters := []string{
		"status=error",
		"name=gym.verify status=error",
		"-status=error",
		"service=policy_model dur>5ms",
		"dur>=120ms",
		"http.status_code>=500",
		"asgi.event.type~response",
		"seed_session",
		"kind=client",
		`name="POST /verify" dur<6ms`,
		"error",
	}
	for _, capture := range []string{"s41-obs0-iso/all", "s41-obs0-iso/spec-server+rollout+verify", "s41-obs0-iso/broken-model", "s41-obs1-iso/all"} {
		t.Run(capture, func(t *testing.T) {
			base := realModel(t, capture, 120, 40, "all")
			all := listed(base)
			if len(all) == 0 {
				t.Fatal("the list shows no rollout")
			}
			for _, f := range filters {
				m := keys(t, realModel(t, capture, 120, 40, "all"), "/")
				m = typeText(t, m, f)
				m = keys(t, m, "enter")
				if m.rollouts.filterErr != "" {
					t.Fatalf("%q: filter error %s", f, m.rollouts.filterErr)
				}
				tuiIDs := listed(m)
				args := append([]string{"preview", "--json", "--spec", "all", "--where", f}, realFiles(t, capture)...)
				out, err := exec.Command(bin, args...).Output()
				if err != nil {
					t.Fatalf("preview --where %q: %v", f, err)
				}
				var p struct {
					PerRollout []struct {
						RolloutID string `json:"rollout_id"`
					} `json:"per_rollout"`
				}
				if err := json.Unmarshal(out, &p); err != nil {
					t.Fatalf("preview --where %q: %v", f, err)
				}
				var cliIDs []string
				for _, r := range p.PerRollout {
					cliIDs = append(cliIDs, r.RolloutID)
				}
				slices.Sort(cliIDs)
				if !slices.Equal(tuiIDs, cliIDs) {
					t.Errorf("%q: the TUI lists %d rollouts %v, --where selects %d %v", f, len(tuiIDs), tuiIDs, len(cliIDs), cliIDs)
				}
				t.Logf("%q: %d of %d rollouts", f, len(tuiIDs), len(all))
			}
		})
	}
}

// When rollout ids start alike (one trace for the whole run, or a few
// traces each shared by several rollouts, so the structural ids share
// "~<trace>/"), a list too narrow for the whole id still tells every row
// apart, with the waterfall focused (the list narrowed) or not.
func TestRealGymNarrowIDsDiffer(t *testing.T) {
	var cases []string
	for _, dir := range []string{"s41-obs0-iso", "s41-obs0-leak"} {
		m, err := filepath.Glob(filepath.Join("..", "testdata", "real-gym", dir, "*", "meta.json"))
		if err != nil || len(m) == 0 {
			t.Fatalf("no captures under %s: %v", dir, err)
		}
		for _, f := range m {
			cases = append(cases, dir+"/"+filepath.Base(filepath.Dir(f)))
		}
	}
	for _, c := range cases {
		for _, sz := range [][2]int{{80, 24}, {100, 40}, {120, 40}} {
			for _, focus := range [][]string{nil, {"tab"}} {
				m := realModel(t, c, sz[0], sz[1], "all")
				m = keys(t, m, focus...)
				narrowIDsDiffer(t, fmt.Sprintf("%s %d×%d %v", c, sz[0], sz[1], focus), m.rollouts)
			}
		}
	}
}

func narrowIDsDiffer(t *testing.T, name string, l *rolloutList) {
	t.Helper()
	seen := map[string]bool{}
	n := 0
	for _, line := range strings.Split(l.view(), "\n")[2:] {
		f := strings.Fields(strings.TrimLeft(ansi.Strip(line), " ›★"))
		if len(f) < 2 || f[0] == "run:" || f[0] == "unattributed" {
			continue
		}
		n++
		if !regexp.MustCompile(`(✓ joined|✗ split|… pending|… in flight)( |$)`).MatchString(ansi.Strip(line)) {
			t.Errorf("%s: the join verdict is cut: %q", name, ansi.Strip(line))
		}
		if seen[f[0]] {
			t.Errorf("%s: two rollouts show as %q:\n%s", name, f[0], l.view())
			return
		}
		seen[f[0]] = true
	}
	if want := min(l.listHeight(), len(l.snap.Rollouts)); n < want {
		t.Errorf("%s: %d rollout rows seen, want %d:\n%s", name, n, want, l.view())
	}
}

// The search's query and hit count stay on screen however long the
// rollout's id: the rest of the title gives way.
func TestRealGymSearchStatusShown(t *testing.T) {
	re := regexp.MustCompile(`/gym\.verify (\d+)/(\d+)`)
	for _, w := range []int{80, 120, 200} {
		m := realModel(t, "s41-obs0-iso/all", w, 40, "all")
		m = keys(t, m, "tab", "/")
		m = typeText(t, m, "gym.verify")
		m = keys(t, m, "enter")
		title := ansi.Strip(strings.Split(m.trace.view(), "\n")[0])
		if !re.MatchString(title) {
			t.Errorf("%d columns: the title lacks the search and its hits: %q", w, title)
		}
		if ansi.StringWidth(title) > m.trace.width {
			t.Errorf("%d columns: title %q is wider than the panel (%d)", w, title, m.trace.width)
		}
	}
}

// At 80×24 the short what-if keeps the joining verdict with the capture's
// first broken hop, its finding and its likely fix, uncut.
func TestRealGymShortVerdictWhole(t *testing.T) {
	for _, tc := range []struct{ capture, want string }{
		{"s41-obs0-iso/spec-server+rollout+verify", "joining ✓ intact 20/20 (both) · as captured: ✗ 20/20 split · 9 broken hops (all: tab, then pgdn): ✗ in capture ? → policy_model (POST /v1/responses): no CLIENT span calls it (http_client off? server off?)"},
		{"s41-obs0-iso/broken-model", "joining ✓ intact 20/20 (both) · as captured: ✗ 20/20 split: in capture simple_agent → policy_model (POST /v1/responses): CLIENT span has no SERVER child (server off in policy_model?)"},
	} {
		m := realModel(t, tc.capture, 80, 24, "default")
		scr := m.View()
		flat := strings.Join(strings.Fields(strings.Map(func(r rune) rune {
			if r == '│' || r == '┃' {
				return ' '
			}
			return r
		}, ansi.Strip(scr))), " ")
		if !strings.Contains(flat, tc.want) {
			t.Errorf("%s at 80×24: the verdict lacks %q:\n%s", tc.capture, tc.want, scr)
		}
	}
}

// Latency by operation at 120×40 shows p50, p90, p99 and max, and two
// operations never read alike however long their names.
func TestRealGymStatsColumns(t *testing.T) {
	m := realModel(t, "s41-obs0-iso/all", 120, 40, "all")
	m = keys(t, m, "t", "a", "a") // over all rollouts
	// Every line the view scrolls through, as drawn at this width.
	body := strings.Split(ansi.Strip(strings.Join(m.stats.lines, "\n")), "\n")
	head := regexp.MustCompile(`by span name\s+spans\s+p50\s+p90\s+p99\s+max\s+self`)
	if !head.MatchString(strings.Join(body, "\n")) {
		t.Fatalf("no p50/p90/p99/max/self columns:\n%s", strings.Join(body, "\n"))
	}
	seen := map[string]bool{}
	in := false
	for _, l := range body {
		switch {
		case strings.Contains(l, "by span name"):
			in, seen = true, map[string]bool{}
			continue
		case strings.Contains(l, "by group"), strings.TrimSpace(l) == "":
			in = false
		}
		if !in || strings.Contains(l, "Statistics") {
			continue
		}
		name := strings.TrimSpace(ansi.Cut(l, 0, 1+22))
		if seen[name] && name != "" {
			t.Errorf("two operations read %q:\n%s", name, strings.Join(body, "\n"))
		}
		seen[name] = true
	}
	told := false
	for name := range seen {
		told = told || strings.HasPrefix(name, "POST /v1") && strings.HasSuffix(name, " receive")
	}
	if !told {
		t.Errorf("the model call's receive span is not told apart: %v", seen)
	}
}

// Comparing two rollouts of a real run at 120×40: every changed operation
// reads differently, its route and span kind kept.
func TestRealGymCompareRowsDiffer(t *testing.T) {
	m := realModel(t, "s41-obs0-iso/all", 120, 40, "all")
	m = keys(t, m, "m", "down", "down", "c")
	body := strings.Split(ansi.Strip(strings.Join(m.compare.lines, "\n")), "\n")
	seen := map[string]bool{}
	in, rows := false, 0
	for _, l := range body {
		if strings.Contains(l, "changed operations") {
			in = true
			continue
		}
		if !in {
			continue
		}
		if strings.TrimSpace(l) == "" {
			break
		}
		key := strings.TrimSpace(ansi.Cut(l, 0, m.compare.width-(1+4+1+4+1+4+1+4+1+7+1+7)))
		if seen[key] {
			t.Errorf("two changed operations read %q:\n%s", key, strings.Join(body, "\n"))
		}
		seen[key] = true
		rows++
	}
	if rows < 5 {
		t.Errorf("%d changed operations:\n%s", rows, strings.Join(body, "\n"))
	}
}

// At 120×40 the budget is said on a line of its own and each spec's
// verdict fits its column on the next: none is cut, none goes on to
// another line.
func TestRealGymBudgetOneLine(t *testing.T) {
	for _, tc := range []struct{ budget, against, cell string }{
		{"30spans/rollout", "30 spans/rollout", `misses by \d+(\.\d+)? \(\d+(\.\d+)?\)`},
		{"2GB/day", `2 GB/day at \d+\.\d\d rollouts/s`, `misses by \d+(\.\d+)? \(\d+(\.\d+)?\)`},
		{"60spans/rollout", "60 spans/rollout", `fits \(\d+(\.\d+)?\)`},
	} {
		t.Run(tc.budget, func(t *testing.T) {
			m := realModelWith(t, "s41-obs0-iso/all", 120, 40, "default", func(o *Options) {
				b, err := whatif.ParseBudget(tc.budget)
				if err != nil {
					t.Fatal(err)
				}
				o.Budget = &b
			})
			lines := strings.Split(ansi.Strip(m.View()), "\n")
			head := regexp.MustCompile(` budget {10}` + tc.against + ` +│$`)
			cells := regexp.MustCompile(`^ {16}(` + tc.cell + `) +(` + tc.cell + `) +│$`)
			for i, l := range lines {
				loc := head.FindStringIndex(l)
				if loc == nil {
					continue
				}
				// The comparison's columns start where its label does.
				at := ansi.StringWidth(l[:loc[0]]) + 1
				if i+2 >= len(lines) || !cells.MatchString(ansi.Cut(lines[i+1], at, 200)) {
					t.Fatalf("the verdicts under %q are not one line each:\n%s", l, strings.Join(lines, "\n"))
				}
				if next := ansi.Cut(lines[i+2], at, 200); regexp.MustCompile(`^ {16}\S`).MatchString(next) {
					t.Errorf("a verdict goes on to another line: %q", next)
				}
				return
			}
			t.Errorf("no budget line for %s:\n%s", tc.budget, strings.Join(lines, "\n"))
		})
	}
}

// Side by side at 120×40, the joining verdict of a capture with many broken
// hops says how many there are before listing them, and pgdn reaches them.
func TestRealGymHopCount(t *testing.T) {
	m := realModel(t, "s41-obs0-iso/spec-server+rollout+verify", 120, 40, "default")
	if v := ansi.Strip(m.View()); !strings.Contains(v, "9 hops broken in the capture (pgdn for all):") {
		t.Errorf("no hop count at 120×40:\n%s", v)
	}
	m = keys(t, m, "tab", "tab", "pgdown", "pgdown", "pgdown")
	if v := ansi.Strip(m.View()); !strings.Contains(v, "/v1/responses): SERVER span has no parent") {
		t.Errorf("pgdn does not reach the last hop:\n%s", v)
	}
}

// A capture whose only findings are context leaks (real Gym reusing a
// keep-alive connection) joins: the leaks are said as leaks, never as ✗
// broken hops beside a ✓ verdict.
func TestRealGymLeaksAreNotBreaks(t *testing.T) {
	m := realModel(t, "s41-obs0-leak/all", 120, 40, "default")
	v := ansi.Strip(m.View())
	if !regexp.MustCompile(`joining\s+✓ intact 20/20\s+✓ intact 20/20`).MatchString(v) {
		t.Errorf("no intact verdict:\n%s", v)
	}
	if strings.Contains(v, "✗") || strings.Contains(v, "hops broken") {
		t.Errorf("a leak shown as a join break:\n%s", v)
	}
	if !strings.Contains(v, "context leak in capture: simple_agent →") {
		t.Errorf("the leak is not named:\n%s", v)
	}
	m = keys(t, m, "tab", "tab", "pgdown", "pgdown")
	v = ansi.Strip(m.View())
	if strings.Contains(v, "✗") || strings.Contains(v, "hops broken") {
		t.Errorf("a leak shown as a join break:\n%s", v)
	}
	flat := strings.Join(strings.Fields(strings.NewReplacer("│", " ", "┃", " ").Replace(v)), " ")
	if !strings.Contains(flat, "a server-side context leak, not a span_groups setting") {
		t.Errorf("the leak's note is dropped:\n%s", v)
	}
	m = realModel(t, "s41-obs0-leak/all", 80, 24, "default")
	if v := ansi.Strip(m.View()); !strings.Contains(v, "joining ✓ intact 20/20 (both)") || strings.Contains(v, "in capture") {
		t.Errorf("80×24 verdict of a leaking capture:\n%s", v)
	}
}

// Golden screens of real Gym captures with breaks in them, at the three
// sizes people use: what a user sees first on opening them.
func TestRealGymScreens(t *testing.T) {
	for _, tc := range []struct {
		name, capture string
		w, h          int
		keys          []string
		budget        string
	}{
		{"http_client-off-80x24", "s41-obs0-iso/spec-server+rollout+verify", 80, 24, nil, ""},
		{"http_client-off-120x40", "s41-obs0-iso/spec-server+rollout+verify", 120, 40, nil, ""},
		{"http_client-off-200x50", "s41-obs0-iso/spec-server+rollout+verify", 200, 50, nil, ""},
		{"broken-model-120x40", "s41-obs0-iso/broken-model", 120, 40, nil, ""},
		{"broken-model-waterfall-120x40", "s41-obs0-iso/broken-model", 120, 40, []string{"tab"}, ""},
		{"leak-120x40", "s41-obs0-leak/all", 120, 40, nil, ""},
		{"leak-80x24", "s41-obs0-leak/all", 80, 24, nil, ""},
		{"leak-waterfall-80x24", "s41-obs0-leak/all", 80, 24, []string{"down", "down", "tab"}, ""},
		{"leak-waterfall-120x40", "s41-obs0-leak/all", 120, 40, []string{"down", "down", "tab"}, ""},
		{"rl-groups-bottom-120x40", "s61-rl-iso/rl-all", 120, 40, []string{"tab", "tab", "G"}, ""},
		{"budget-120x40", "s41-obs0-iso/all", 120, 40, []string{"3"}, "50spans/rollout"},
		{"budget-bytes-120x40", "s41-obs0-iso/all", 120, 40, []string{"3"}, "2GB/day"},
		{"budget-bytes-80x24", "s41-obs0-iso/all", 80, 24, []string{"3"}, "2GB/day"},
		// Two rollouts of one shape, the second marked against the sixth.
		{"compare-same-80x24", "s41-obs0-iso/all", 80, 24, []string{"down", "m", "down", "down", "down", "down", "c"}, ""},
		{"compare-same-120x40", "s41-obs0-iso/all", 120, 40, []string{"down", "m", "down", "down", "down", "down", "c"}, ""},
		// The failing rollouts against the others, the cursor on the
		// fourth row: its feature is cut in the table, whole below it.
		{"cohort-80x24", "s41-obs0-iso/all", 80, 24, []string{"/", "status=error", "enter", "C", "j", "j", "j"}, ""},
		{"cohort-120x40", "s41-obs0-iso/all", 120, 40, []string{"/", "status=error", "enter", "C", "j", "j", "j"}, ""},
		{"cohort-200x50", "s41-obs0-iso/all", 200, 50, []string{"/", "status=error", "enter", "C", "j", "j", "j"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := realModelWith(t, tc.capture, tc.w, tc.h, "default", func(o *Options) {
				if tc.budget != "" {
					b, err := whatif.ParseBudget(tc.budget)
					if err != nil {
						t.Fatal(err)
					}
					o.Budget = &b
				}
			})
			m = keys(t, m, tc.keys...)
			got := m.View()
			for i, l := range strings.Split(got, "\n") {
				if w := ansi.StringWidth(l); w > tc.w {
					t.Errorf("line %d is %d cells wide, want ≤ %d", i, w, tc.w)
				}
			}
			golden.Check(t, []byte(got))
		})
	}
}

// TestNoColorNamesTheProcess: without colour, nothing but the service
// column says which process a span is in, so the focused waterfall keeps
// it however long the names, and each process's bars and legend are drawn
// with a fill of their own; with colour the column may give way to names.
func TestNoColorNamesTheProcess(t *testing.T) {
	for _, color := range []bool{false, true} {
		m := realModel(t, "s41-obs0-iso/broken-model", 120, 40, "default")
		if color {
			r := lipgloss.NewRenderer(io.Discard)
			r.SetColorProfile(termenv.TrueColor)
			m.opts.Renderer = r
			m = New(m.opts)
			m.refresh = time.Nanosecond
			m = send(t, m, tea.WindowSizeMsg{Width: 120, Height: 40})
			m = run(t, m, m.Init())
		}
		m = keys(t, m, "tab")
		head := ansi.Strip(strings.Split(m.trace.view(), "\n")[1])
		if hasSvc := strings.Contains(head, "service"); hasSvc == color {
			t.Errorf("colour %v: the focused waterfall's columns %q (service column shown: %v)", color, head, hasSvc)
		}
		if color {
			continue
		}
		m = keys(t, m, "?")
		legend := map[string]bool{}
		for _, f := range regexp.MustCompile(`(?:^|\s)([█▒░▚▞▌]{3}) +[a-z]`).FindAllStringSubmatch(ansi.Strip(m.View()), -1) {
			if r := []rune(f[1]); r[0] != r[1] || r[1] != r[2] {
				continue
			}
			if legend[f[1]] {
				t.Errorf("two processes share the fill %q in the legend", f[1])
			}
			legend[f[1]] = true
		}
		if len(legend) < 3 {
			t.Errorf("the legend tells %d processes apart by fill", len(legend))
		}
	}
}

// TestRealGymWorthAsCLI: the cost and worth view reads as preview's table
// does for the same capture and spec, figure for figure, rounded alike.
func TestRealGymWorthAsCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := cli(t)
	for _, tc := range []struct{ capture, spec string }{
		{"s41-obs0-iso/all", "default"},
		{"s41-obs0-iso/spec-server+rollout+verify", "server,rollout,verify"},
	} {
		t.Run(tc.capture, func(t *testing.T) {
			m := realModel(t, tc.capture, 200, 50, tc.spec)
			m = keys(t, m, "w")
			tuiRows := map[string][]string{}
			for _, l := range m.worth.lines {
				f := strings.Fields(ansi.Strip(l))
				if len(f) >= 9 && f[0] != "group" && (f[1] == "on" || f[1] == "off") {
					// group on spans/r bytes/r cpu ms/s wall p50 p99 [err] [joins…]
					row := []string{f[1], f[2], f[3], f[4], f[6], f[7], f[8]}
					rest := f[9:]
					errs := "0"
					if len(rest) > 0 && rest[0] != "keeps" {
						errs, rest = rest[0], rest[1:]
					}
					joins := strings.Join(rest, " ")
					if joins == "" {
						joins = "-"
					}
					tuiRows[f[0]] = append(row, errs, joins)
				}
			}
			args := append([]string{"preview", "--spec", tc.spec, "--current", tc.spec}, realFiles(t, tc.capture)...)
			out, err := exec.Command(bin, args...).Output()
			if err != nil {
				t.Fatalf("preview: %v", err)
			}
			_, table, ok := strings.Cut(string(out), "cost and worth per group")
			if !ok {
				t.Fatalf("no cost and worth table:\n%s", out)
			}
			n := 0
			for _, l := range strings.Split(table, "\n")[2:] {
				f := strings.Fields(l)
				if len(f) < 10 {
					break
				}
				// group preview spans/r bytes/r cpu wall p50 p99 errors joins…
				want := append([]string{f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8]}, strings.Join(f[9:], " "))
				got, ok := tuiRows[f[0]]
				if !ok {
					t.Errorf("group %s: in preview's table, not in the TUI's", f[0])
					continue
				}
				if !slices.Equal(got, want) {
					t.Errorf("group %s: TUI %q, preview %q", f[0], got, want)
				}
				n++
			}
			if n < 3 || n != len(tuiRows) {
				t.Errorf("%d groups compared, the TUI lists %d:\n%s", n, len(tuiRows), table)
			}
		})
	}
}

// TestRealGymWideShowsWhole: at 200 columns the list widens towards its ids
// and services (up to half the screen: whole ids, the first services
// whole), and the focused waterfall's service column to its names.
func TestRealGymWideShowsWhole(t *testing.T) {
	m := realModel(t, "s41-obs0-iso/all", 200, 50, "all")
	rows := 0
	for _, l := range strings.Split(ansi.Strip(m.rollouts.view()), "\n")[2:] {
		if strings.Contains(l, "joined") || strings.Contains(l, "split") {
			rows++
			f := strings.Fields(strings.TrimLeft(l, " ›"))
			svcs := strings.Split(f[len(f)-1], ",")
			if strings.Contains(f[0], "…") || len(svcs) < 3 || strings.Contains(strings.Join(svcs[:2], ","), "…") {
				t.Errorf("a rollout row cuts its id or its first two services at 200 columns: %q", l)
			}
		}
	}
	if rows < 5 {
		t.Fatalf("%d rollout rows:\n%s", rows, m.rollouts.view())
	}
	m = keys(t, m, "tab")
	if v := ansi.Strip(m.trace.view()); !strings.Contains(v, " example_single_tool_call ") {
		t.Errorf("the focused waterfall cuts the service name at 200 columns:\n%s", v)
	}
}

// TestRealGymStatsTitleFits: at 80 columns the statistics title keeps
// which lines show, whole, letting the counts and the hint go first.
func TestRealGymStatsTitleFits(t *testing.T) {
	m := realModel(t, "s41-obs0-iso/all", 80, 24, "all")
	m = keys(t, m, "t")
	title := ansi.Strip(strings.Split(m.stats.view(), "\n")[0])
	if !regexp.MustCompile(`^Statistics ~\S+ .*· 1–\d+ of \d+$`).MatchString(title) {
		t.Errorf("statistics title at 80 columns: %q", title)
	}
	if ansi.StringWidth(title) > m.stats.width {
		t.Errorf("title %d wide, panel %d", ansi.StringWidth(title), m.stats.width)
	}
}

// A capture a broken model server split reads as it was beside the
// prediction (default has server on, so it predicts joined), at 80×24 in
// the short verdict and at 120×40 in the comparison.
func TestRealGymAsCaptured(t *testing.T) {
	for _, c := range []string{"s41-obs0-iso/broken-model", "s52-g3-obs0-iso/broken-model"} {
		for _, sz := range [][2]int{{80, 24}, {120, 40}} {
			m := realModel(t, c, sz[0], sz[1], "default")
			v := whatif.Captured(m.check, m.groups.curRep)
			if v.Split == 0 {
				t.Fatalf("%s: the check finds no split rollout", c)
			}
			want := "as captured"
			if sz[0] == 80 {
				want += ":"
			}
			want += " " + v.String()
			if s := ansi.Strip(m.View()); !strings.Contains(strings.Join(strings.Fields(s), " "), want) {
				t.Errorf("%s at %dx%d: no %q:\n%s", c, sz[0], sz[1], want, s)
			}
		}
	}
	m := realModel(t, "s41-obs0-iso/all", 120, 40, "default")
	if s := ansi.Strip(m.View()); strings.Contains(s, "as captured") {
		t.Errorf("an intact capture says as captured:\n%s", s)
	}
}

// P shows the critical path at every size: the waterfall keeps its title's
// counts, a line of its own says who holds the time (every holder's share
// at 120 columns, uncut at 80), and rows on the path carry its mark even
// where no bar is drawn.
func TestRealGymCriticalPathShown(t *testing.T) {
	for _, sz := range [][2]int{{80, 24}, {120, 40}, {200, 50}} {
		m := realModel(t, "s41-obs1-iso/all", sz[0], sz[1], "default")
		r := m.rollouts.Selected()
		m = keys(t, m, "P")
		if m.focus != slotTrace {
			t.Errorf("%dx%d: P leaves the focus on %s", sz[0], sz[1], m.focus)
		}
		lines := strings.Split(ansi.Strip(m.trace.view()), "\n")
		title := lines[0]
		for _, want := range []string{countNoun(r.Spans, "span"), countNoun(int(r.Traces), "trace"), fmtDur(r.End - r.Start)} {
			if !strings.Contains(title, want) {
				t.Errorf("%dx%d: the title %q lost %q", sz[0], sz[1], title, want)
			}
		}
		p := m.trace.marks.path
		line := strings.TrimSpace(lines[1])
		if !strings.HasPrefix(line, string(glyphPath)+" ") || ansi.StringWidth(lines[1]) > m.trace.width {
			t.Fatalf("%dx%d: no path line: %q", sz[0], sz[1], lines[1])
		}
		for i, h := range p.Holders {
			name := h.Holder.String()
			if sz[0] >= 120 && !strings.Contains(line, name+" ") {
				t.Errorf("%dx%d: the path line %q lacks %s", sz[0], sz[1], line, name)
			}
			if i == 0 && !strings.Contains(line, name) {
				t.Errorf("%dx%d: the path line %q lacks the main holder %s", sz[0], sz[1], line, name)
			}
		}
		marked := 0
		for _, l := range lines[3:] {
			if strings.HasPrefix(strings.TrimPrefix(l, "›"), string(glyphPath)) || strings.HasPrefix(l, " "+string(glyphPath)) {
				marked++
			}
		}
		if marked == 0 {
			t.Errorf("%dx%d: no row carries the path's mark:\n%s", sz[0], sz[1], strings.Join(lines, "\n"))
		}
		m = keys(t, m, "P")
		if l := ansi.Strip(strings.Split(m.trace.view(), "\n")[1]); strings.HasPrefix(l, string(glyphPath)) {
			t.Errorf("%dx%d: P again leaves the path line: %q", sz[0], sz[1], l)
		}
	}
}

// A filter that does not parse, or is half typed, narrows nothing yet: the
// title never counts the run-level rows as matching rollouts.
func TestRealGymBadFilterCount(t *testing.T) {
	for _, c := range []string{"s41-obs1-iso/all", "s41-obs0-iso/spec-server+rollout+verify", "s41-obs0-leak/all"} {
		badFilterCount(t, c)
	}
}

func badFilterCount(t *testing.T, c string) {
	for _, text := range []string{">", "=", "(", "dur>", "status="} {
		m := realModel(t, c, 120, 40, "default") // panels are shared: a fresh one per text
		total := len(m.rollouts.snap.Rollouts)
		m = keys(t, m, "/")
		m = typeText(t, m, text)
		title := ansi.Strip(strings.Split(m.rollouts.view(), "\n")[0])
		var n, of int
		if _, err := fmt.Sscanf(title, "Rollouts %d/%d", &n, &of); err != nil || n > of || of != total {
			t.Errorf("%s, filter %q: title %q, %d rollouts", c, text, title, total)
		}
	}
}
