package tui

import (
	"fmt"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
)

// cohortOpen opens the cohort of a real run's failing rollouts at w×h.
func cohortOpen(t *testing.T, w, h int) Model {
	t.Helper()
	m := realModel(t, "s41-obs0-iso/all", w, h, "default")
	m = keys(t, m, "/")
	m = typeText(t, m, "status=error")
	m = keys(t, m, "enter", "C")
	if !m.cohort.isOpen() || m.cohort.cmp == nil || len(m.cohort.cmp.Rows) < 30 {
		t.Fatalf("no cohort comparison: %s", m.cohort.err)
	}
	return m
}

// TestCohortRowsCursorDetail: the cohort view fills its panel with rows,
// moves a cursor over them as the other panels move, and says the
// cursor's feature whole below them, wrapped, however the row cut it.
func TestCohortRowsCursorDetail(t *testing.T) {
	for _, sz := range []struct{ w, h, rows int }{{80, 24, 5}, {120, 40, 15}, {200, 50, 25}} {
		t.Run(fmt.Sprintf("%dx%d", sz.w, sz.h), func(t *testing.T) {
			m := cohortOpen(t, sz.w, sz.h)
			c := m.cohort
			rows := c.cmp.Rows
			// The first row whose feature its table line cuts.
			cut := -1
			for i := range rows {
				if strings.HasSuffix(strings.TrimRight(c.rowText[i], " "), "…") {
					cut = i
					break
				}
			}
			if cut < 0 {
				t.Fatal("no row cut: the test shows nothing")
			}
			for range cut {
				m = keys(t, m, "j")
			}
			if m.cohort.cursor != cut {
				t.Fatalf("cursor %d after %d downs", m.cohort.cursor, cut)
			}
			panel := cohortPanel(t, m)
			var shown int
			var detail []string
			rule := -1
			for i, l := range panel {
				switch {
				case strings.HasPrefix(l, "─"):
					rule = i
				case rule >= 0:
					detail = append(detail, strings.TrimSpace(l))
				case isCohortRow(l):
					shown++
				}
			}
			if want := min(len(rows), m.cohort.rowsShown()); shown != want || shown < sz.rows {
				t.Errorf("%d rows shown, want %d (at least %d):\n%s", shown, want, sz.rows, strings.Join(panel, "\n"))
			}
			// Nothing is left blank between the rows and the detail.
			if rule < 1 || strings.TrimSpace(panel[rule-1]) == "" {
				t.Errorf("blank above the detail:\n%s", strings.Join(panel, "\n"))
			}
			var sel string
			for _, l := range panel {
				if strings.HasPrefix(l, "›") {
					sel = l
				}
			}
			if want := fmt.Sprintf("%+.2f", rows[cut].Effect); !strings.HasPrefix(sel, "› "+want) {
				t.Errorf("cursor line %q, want row %d (%s)", sel, cut, want)
			}
			f := rows[cut].Feature
			whole := strings.Join(detail, " ")
			if !strings.Contains(whole, f.Kind.String()+" "+f.Name) || !strings.Contains(whole, f.Service) {
				t.Errorf("the detail does not say %s %q whole:\n%s", f.Kind, f.String(), strings.Join(panel, "\n"))
			}
			if !strings.Contains(whole, fmt.Sprintf("over %d rollouts", rows[cut].CohortN)) || !strings.Contains(whole, fmt.Sprintf("effect %+.2f", rows[cut].Effect)) {
				t.Errorf("the detail lacks the sides' counts or the effect:\n%s", whole)
			}
			// G reaches the last row, g the first, k goes back one.
			m = keys(t, m, "G")
			if title := strings.Split(ansi.Strip(m.cohort.view()), "\n")[0]; m.cohort.cursor != len(rows)-1 || !strings.Contains(title, fmt.Sprintf("%d of %d", len(rows), len(rows))) {
				t.Errorf("G: cursor %d of %d", m.cohort.cursor, len(rows))
			}
			m = keys(t, m, "g", "j", "j", "k")
			if m.cohort.cursor != 1 {
				t.Errorf("g j j k: cursor %d, want 1", m.cohort.cursor)
			}
		})
	}
}

// isCohortRow reports a table row of the cohort: a gutter, then a signed effect.
func isCohortRow(l string) bool {
	return len(l) > 7 && (l[0] == ' ' || strings.HasPrefix(l, "›")) && strings.ContainsAny(strings.TrimSpace(strings.TrimPrefix(l, "›"))[:1], "+-")
}

// cohortPanel is the cohort panel's content lines as drawn, borders off.
func cohortPanel(t *testing.T, m Model) []string {
	t.Helper()
	r := m.rects[slotTrace]
	var out []string
	for i, l := range strings.Split(ansi.Strip(m.View()), "\n") {
		if i <= r.y || i >= r.y+r.h-1 {
			continue
		}
		out = append(out, strings.TrimRight(ansi.Cut(l, r.x+1, r.x+r.w-1), " "))
	}
	if len(out) == 0 || !strings.HasPrefix(out[0], "Cohort") {
		t.Fatalf("the trace slot does not show the cohort:\n%s", ansi.Strip(m.View()))
	}
	return out[1:]
}

// TestCohortMouse: a click on a row puts the cursor there and the wheel
// moves it, as on the other lists.
func TestCohortMouse(t *testing.T) {
	m := cohortOpen(t, 120, 40)
	r := m.rects[slotTrace]
	// Below the top border: the title, the lines above the rows, then row 5.
	y := r.y + 1 + 1 + len(m.cohort.head) + 5
	m = send(t, m, tea.MouseMsg{X: r.x + 10, Y: y, Button: tea.MouseButtonLeft, Action: tea.MouseActionPress})
	if m.cohort.cursor != 5 {
		t.Fatalf("click on the sixth row: cursor %d", m.cohort.cursor)
	}
	sel := ""
	for _, l := range cohortPanel(t, m) {
		if strings.HasPrefix(l, "›") {
			sel = l
		}
	}
	if want := strings.TrimSpace(m.cohort.rowText[5])[:12]; !strings.Contains(sel, want) {
		t.Errorf("cursor line %q, want row 5 %q", sel, want)
	}
	m = send(t, m, tea.MouseMsg{X: r.x + 10, Y: y, Button: tea.MouseButtonWheelDown, Action: tea.MouseActionPress})
	if m.cohort.cursor != 8 {
		t.Errorf("wheel down from row 5: cursor %d, want 8", m.cohort.cursor)
	}
}
