package tui

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/model"
)

// A live interface opened before any span arrived shows the newest variant;
// once spans tell another one it is rebuilt for it (registry, spec, header)
// and the question is not asked again.
func TestRedetectRebuildsForTheCapturedVariant(t *testing.T) {
	b := newBuilder(t)
	newest := groups.Newest()
	g1, err := groups.LookupVariant("G1")
	if err != nil {
		t.Fatal(err)
	}
	if g1 == newest {
		t.Fatal("the test needs a variant other than the newest")
	}
	def := func(v *groups.Variant) groups.Set { s, _ := v.Registry().PresetSet("default"); return s }
	asked := 0
	var opts Options
	opts = Options{Source: b.st, Registry: newest.Registry(), Current: def(newest), Live: true,
		Variant:     "Gym " + newest.Name + " (newest: nothing captured yet)",
		SnippetPath: filepath.Join(t.TempDir(), SnippetFile), Now: func() time.Time { return t0.Add(time.Hour) },
		Redetect: func(s *model.Snapshot) (*Options, bool) {
			asked++
			if s.Stats.Stored == 0 {
				return nil, false
			}
			o := opts
			o.Registry, o.Current, o.Variant = g1.Registry(), def(g1), "Gym G1 (resource nemo.gym.version=0.5.1)"
			return &o, true
		}}
	m := New(opts)
	m.refresh = time.Nanosecond
	m = send(t, m, tea.WindowSizeMsg{Width: 120, Height: 40})
	m = run(t, m, m.Init())
	if !strings.Contains(m.View(), "newest: nothing captured yet") || asked != 1 {
		t.Fatalf("before spans: asked %d times; header:\n%s", asked, firstLines(m.View(), 2))
	}
	b.capture(t, 3, false)
	m = send(t, m, snapshotMsg{snap: b.st.Snapshot()})
	v := m.View()
	if !strings.Contains(v, "Gym G1 (resource nemo.gym.version=0.5.1)") || strings.Contains(v, "newest: nothing") {
		t.Fatalf("after spans the header does not name G1:\n%s", firstLines(v, 2))
	}
	if m.reg.Variant() != g1.Name || m.opts.Redetect != nil {
		t.Fatalf("not rebuilt for G1 (registry of %s; redetect still set: %v)", m.reg.Variant(), m.opts.Redetect != nil)
	}
	if !strings.Contains(v, "variant from the capture: Gym G1") {
		t.Errorf("the status line does not say the variant changed:\n%s", v)
	}
	if m.width != 120 || m.height != 40 {
		t.Fatalf("size lost in the rebuild: %dx%d", m.width, m.height)
	}
	if got := len(m.rollouts.rows); got != 3 {
		t.Fatalf("rollout list has %d rollouts after the rebuild, want 3", got)
	}
	b.capture(t, 2, false)
	m = send(t, m, snapshotMsg{snap: b.st.Snapshot()})
	if asked != 2 {
		t.Fatalf("asked %d times, want 2: a settled variant is not asked again", asked)
	}
}

func firstLines(s string, n int) string {
	ls := strings.SplitN(s, "\n", n+1)
	return strings.Join(ls[:min(n, len(ls))], "\n")
}
