package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/nemo-gym/gymtrace/gate/whatif"
	"github.com/nemo-gym/gymtrace/model"
)

// TestWaitingOrphansHiddenWhileFresh: a span exported before its open parent
// is not listed as a rollout while it may still be joined, and is listed
// as unattributed (it belongs to no rollout one can name) once the grace
// window has passed.
func TestWaitingOrphansHiddenWhileFresh(t *testing.T) {
	b := newBuilder(t)
	b.capture(t, 2, false)
	// An ASGI send span whose SERVER parent has not ended yet.
	orphan := model.Span{SpanID: b.id(), Name: b.str("POST /run http send"),
		Resource: b.resource("simple_agent"), Kind: model.KindInternal, Start: t0.UnixNano(), End: t0.UnixNano() + 1000}
	var spans model.Batch
	spans.Append(traceID(77), b.id(), orphan)
	if err := b.st.Add(spans); err != nil {
		t.Fatal(err)
	}
	b.st.Sync()
	snap := b.st.Snapshot()
	eng := whatif.NewEngine(testRegistry())
	keys := DefaultKeyMap()
	st := DefaultStyles(lipgloss.DefaultRenderer())

	for _, tc := range []struct {
		name      string
		grace     time.Duration
		wantRows  int
		wantTitle string
	}{
		// Rows: the 2 rollouts, then (past the grace only) the fragment
		// nobody owns, listed as such.
		{"fresh: hidden and counted", 5 * time.Second, 2, "1 span awaits its parent"},
		{"past grace: unattributed", 0, 3, "Rollouts 2 · sort: oldest first · 1 unattributed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newRolloutList(st, keys)
			l.setSize(60, 10)
			l.SetSnapshot(snap)
			l.SetCheck(eng.Check(snap, t0, tc.grace))
			if len(l.rows) != tc.wantRows {
				t.Errorf("rows = %d, want %d", len(l.rows), tc.wantRows)
			}
			if !strings.Contains(l.view(), tc.wantTitle) {
				t.Errorf("view lacks %q:\n%s", tc.wantTitle, l.view())
			}
		})
	}
}

// TestPendingNotCalledSplit: a rollout whose second piece is still waiting
// for its parent is counted pending in the joining verdict while fresh, and
// split once the grace window has passed.
func TestPendingNotCalledSplit(t *testing.T) {
	b := newBuilder(t)
	b.capture(t, 2, false)
	var ab model.AttrBuilder
	ab.String(b.l, b.str(model.RolloutIDKey), []byte("r0000"))
	late := model.Span{SpanID: b.id(), Name: b.str("gym.model.responses"),
		Resource: b.resource("policy_model"), Kind: model.KindInternal, Start: t0.UnixNano(), End: t0.UnixNano() + 1000, Attrs: ab.Attrs()}
	var spans model.Batch
	spans.Append(traceID(0), b.id(), late)
	if err := b.st.Add(spans); err != nil {
		t.Fatal(err)
	}
	b.st.Sync()
	snap := b.st.Snapshot()
	reg := testRegistry()
	eng := whatif.NewEngine(reg)
	all := reg.All()
	rep := eng.Preview(snap, all)
	if rep.Result.RolloutsSplit != 1 {
		t.Fatalf("preview splits %d rollouts, want the one with a waiting piece", rep.Result.RolloutsSplit)
	}
	for _, tc := range []struct {
		name  string
		grace time.Duration
		want  string
	}{
		{"fresh", 5 * time.Second, "✓ 0/2 +2 pending"}, // both fresh: pending, as the list says
		{"past grace", 0, "✗ 1/2 split"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newGroupsPanel(DefaultStyles(lipgloss.DefaultRenderer()), DefaultKeyMap(), reg, all, "all")
			g.setSize(120, 30)
			g.SetReports(rep, rep)
			g.SetCheck(eng.Check(snap, t0, tc.grace))
			if !strings.Contains(g.view(), tc.want) {
				t.Errorf("joining verdict lacks %q:\n%s", tc.want, g.view())
			}
			// Side by side at its narrowest, the verdict is carried on to
			// the next row, never cut.
			g.setSize(104, 30)
			var words []string
			lines := strings.Split(g.view(), "\n")
			for i, l := range lines {
				label := strings.TrimSpace(ansi.Cut(l, 66, 66+16))
				if label != "joining" {
					continue
				}
				for k := i; k < len(lines); k++ {
					if k > i && strings.TrimSpace(ansi.Cut(lines[k], 66, 66+16)) != "" {
						break
					}
					cell := strings.Fields(ansi.Cut(lines[k], 66+16, 66+16+11))
					if len(cell) == 0 {
						break
					}
					words = append(words, cell...)
				}
				break
			}
			if got := strings.Join(words, " "); got != tc.want {
				t.Errorf("at 104 columns the current verdict reads %q, want %q:\n%s", got, tc.want, g.view())
			}
		})
	}
}
