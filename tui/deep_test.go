package tui

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gate/whatif"
	"github.com/nemo-gym/gymtrace/model"
)

// deepChain stores one rollout that is a chain of n spans.
func deepChain(tb testing.TB, b *builder, n int) {
	tb.Helper()
	var attrs model.AttrBuilder
	attrs.String(b.l, b.str(model.RolloutIDKey), []byte("r-deep"))
	res := b.resource("simple_agent")
	trace := traceID(1)
	spans := model.Batch{Spans: make([]model.Span, n), Traces: make([]model.TraceID, n), Parents: make([]model.SpanID, n)}
	for i := range spans.Spans {
		var id model.SpanID
		binary.BigEndian.PutUint64(id[:], uint64(i+1))
		sp := model.Span{SpanID: id, Name: b.str("step"), Resource: res, Kind: model.KindInternal,
			Start: t0.UnixNano() + int64(i), End: t0.UnixNano() + int64(2*n-i)}
		if i == 0 {
			sp.Name, sp.Attrs = b.str("gym.rollout"), attrs.Attrs()
		} else {
			binary.BigEndian.PutUint64(spans.Parents[i][:], uint64(i))
		}
		spans.Spans[i], spans.Traces[i] = sp, trace
	}
	if err := b.st.Add(spans); err != nil {
		tb.Fatal(err)
	}
	b.st.Sync()
}

// TestDeepChain: a 100k-deep chain is drawn, printed and checked in
// seconds, with indentation capped (it was quadratic: a 20k chain took
// 2.5 GB in the TUI, a 100k chain 10 GB of --text).
func TestDeepChain(t *testing.T) {
	n := 100_000
	if raceEnabled {
		n = 20_000
	}
	b := newBuilder(t)
	deepChain(t, b, n)
	snap := b.st.Snapshot()

	t1 := time.Now()
	m := newTestModel(t, b, 120, 40, "all")
	m = keys(t, m, "tab")
	if got := len(m.trace.rows); got != n {
		t.Fatalf("%d rows, want %d", got, n)
	}
	widest := 0
	for _, r := range m.trace.rows {
		widest = max(widest, ansi.StringWidth(r.prefix))
	}
	if widest > 3*maxIndent+12 {
		t.Errorf("widest tree prefix %d cells: indentation is not capped", widest)
	}
	m = keys(t, m, "G")
	if v := m.View(); !strings.Contains(v, "⋯") {
		t.Errorf("the deepest rows do not show their depth:\n%s", v)
	}
	tuiTime := time.Since(t1)

	t2 := time.Now()
	var out bytes.Buffer
	if err := PlainTree(&out, snap); err != nil {
		t.Fatal(err)
	}
	if out.Len() > n*(2*maxIndent+64) {
		t.Errorf("--text wrote %d bytes for %d spans: indentation is not capped", out.Len(), n)
	}
	textTime := time.Since(t2)

	t3 := time.Now()
	rep := whatif.NewEngine(groups.Default()).Check(snap, t0.Add(time.Hour), 0)
	if rep == nil {
		t.Fatal("no check report")
	}
	checkTime := time.Since(t3)
	t.Logf("%d-deep chain: TUI %v, --text %v (%d bytes), check %v", n, tuiTime, textTime, out.Len(), checkTime)
	if el := tuiTime + textTime + checkTime; el > 20*time.Second {
		t.Errorf("a %d-deep chain took %v", n, el)
	}
}
