package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// Past statsSyncSpans a scope is measured off the UI goroutine: the key
// shows "measuring…" and the figures come with the command's message,
// the same as measured in place. On a capture that no longer changes the
// other scopes are measured ahead, so a then shows each at once.
func TestStatsMeasuredOffUIGoroutine(t *testing.T) {
	defer func(n int) { statsSyncSpans = n }(statsSyncSpans)
	b := newBuilder(t)
	b.capture(t, 6, false)
	// Models share their panels: each part starts from a new one.
	fresh := func() Model {
		m := typeText(t, keys(t, newTestModel(t, b, 140, 50, "default"), "/"), "status=error")
		return keys(t, m, "enter")
	}

	// In place, for the figures each scope must show.
	want := map[statsScope]string{}
	m := keys(t, fresh(), "t")
	for sc := statsScope(0); sc < numScopes; sc++ {
		want[sc] = ansi.Strip(m.stats.view())
		m = keys(t, m, "a")
	}
	if !strings.Contains(want[scopeFiltered], "31 spans in 2 rollouts") {
		t.Fatalf("the listed rollouts measured in place:\n%s", want[scopeFiltered])
	}

	statsSyncSpans = 0
	next, cmd := fresh().Update(keyMsg("t"))
	m = next.(Model)
	if v := ansi.Strip(m.stats.view()); !strings.Contains(v, "measuring") {
		t.Errorf("t before the measurement comes:\n%s", v)
	}
	m = run(t, m, cmd)
	if got := ansi.Strip(m.stats.view()); got != want[scopeRollout] {
		t.Errorf("t measured off the UI goroutine:\n%s\nwant\n%s", got, want[scopeRollout])
	}
	for _, sc := range []statsScope{scopeFiltered, scopeAll, scopeRollout} {
		next, _ := m.Update(keyMsg("a"))
		m = next.(Model)
		if got := ansi.Strip(m.stats.view()); got != want[sc] {
			t.Errorf("a to %v, measured ahead:\n%s\nwant\n%s", sc, got, want[sc])
		}
	}

	// Live, nothing is measured ahead: a waits for its own measurement.
	m = fresh()
	m.stats.live = true
	m = keys(t, m, "t")
	next, cmd = m.Update(keyMsg("a"))
	m = next.(Model)
	if v := ansi.Strip(m.stats.view()); !strings.Contains(v, "measuring") {
		t.Errorf("live, a before its measurement:\n%s", v)
	}
	m = run(t, m, cmd)
	if got := ansi.Strip(m.stats.view()); got != want[scopeFiltered] {
		t.Errorf("live, a measured:\n%s\nwant\n%s", got, want[scopeFiltered])
	}
	if n := len(m.stats.cache); n != 2 {
		t.Errorf("live: %d measurements kept, want the 2 asked for", n)
	}
}
