package tui

import (
	"strings"
	"testing"
	"time"
)

// TestHeaderShowsRefusals checks requests refused whole, and strings
// repaired, reach the header: a run where every request is refused must
// not look like silence.
func TestHeaderShowsRefusals(t *testing.T) {
	b := newBuilder(t)
	b.capture(t, 2, false)
	m := newTestModel(t, b, 160, 40, "default")
	if strings.Contains(m.View(), "requests refused") {
		t.Fatal("refusals shown before any")
	}
	b.st.CountRefusedRequest("unsupported_encoding")
	b.st.CountRefusedRequest("unsupported_encoding")
	b.st.CountRepaired(3)
	b.st.Sync()
	// The store publishes the counts on its next tick.
	snap := b.st.Snapshot()
	for i := 0; i < 200 && snap.Stats.RequestsRefused < 2; i++ {
		waitTick()
		snap = b.st.Snapshot()
	}
	m = send(t, m, snapshotMsg{snap: snap})
	v := m.View()
	if !strings.Contains(v, "requests refused 2 (last: unsupported_encoding)") || !strings.Contains(v, "repaired UTF-8 3") {
		t.Errorf("header lacks the refusals or repairs:\n%s", strings.Join(strings.Split(v, "\n")[:3], "\n"))
	}
}

func waitTick() { time.Sleep(10 * time.Millisecond) }
