package tui

import (
	"fmt"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/nemo-gym/gymtrace/model"
)

// benchModel loads about spans spans (rollouts of 98 spans: 30 model turns)
// into a real store and returns a 120×40 model with its analyses applied.
func benchModel(b *testing.B, spans int) Model {
	b.Helper()
	bl := newBuilder(b)
	const turns = 30
	per := 8 + 3*turns
	n := max(spans/per, 1)
	var batch []model.Span
	for i := 0; i < n; i++ {
		start := t0.UnixNano() + int64(i)*int64(50*time.Millisecond)
		batch, _ = bl.emit(batch, traceID(i), model.SpanID{}, start, rolloutTree(fmt.Sprintf("r%07d", i), turns, i%7 == 3))
		if len(batch) >= 50_000 {
			if err := bl.st.Add(model.Batch{Spans: batch}); err != nil {
				b.Fatal(err)
			}
			batch = nil
		}
	}
	if err := bl.st.Add(model.Batch{Spans: batch}); err != nil {
		b.Fatal(err)
	}
	bl.st.Sync()
	return newTestModel(b, bl, 120, 40, "default")
}

func benchSizes() []int {
	if testing.Short() {
		return []int{10_000}
	}
	return []int{10_000, 1_000_000}
}

func BenchmarkView(b *testing.B) {
	for _, size := range benchSizes() {
		base := benchModel(b, size)
		states := []struct {
			name string
			keys []string
		}{
			{"rollouts", nil},
			{"trace", []string{"tab"}},
			{"preview", []string{"2", "tab", "p"}},
			{"groups", []string{"tab", "tab"}},
			{"stats", []string{"t"}},
			{"detail", []string{"tab", "G", "d"}},
			{"help", []string{"?"}},
			{"search", []string{"tab", "/", "g", "y", "m", ".", "m", "enter", "n"}},
		}
		for _, st := range states {
			m := keys(b, base, st.keys...)
			b.Run(fmt.Sprintf("%s/spans=%d", st.name, size), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					_ = m.View()
				}
			})
		}
	}
}

func BenchmarkUpdateKey(b *testing.B) {
	for _, size := range benchSizes() {
		base := benchModel(b, size)
		cases := []struct {
			name  string
			setup []string
			keys  []string // cycled
		}{
			{"rollouts-down-up", nil, []string{"j", "k"}},
			{"trace-down-up", []string{"tab"}, []string{"j", "k"}},
			{"trace-collapse", []string{"tab", "j"}, []string{"enter"}},
			{"group-toggle", []string{"tab", "tab"}, []string{" "}},
			{"sort", nil, []string{"s"}},
			{"trace-search-next", []string{"tab", "/", "g", "y", "m", ".", "m", "enter"}, []string{"n"}},
			{"trace-next-failure", []string{"tab"}, []string{"f"}},
			// Typing a filter and leaving it: the list judges every rollout.
			{"filter-type-esc", nil, []string{"/", "e", "r", "r", "esc"}},
			// 200 columns: each new order measures every row for the wider list.
			{"sort-200x50", []string{"wide"}, []string{"s"}},
		}
		for _, c := range cases {
			m := base
			for _, k := range c.setup {
				if k == "wide" {
					m = send(b, m, tea.WindowSizeMsg{Width: 200, Height: 50})
					continue
				}
				m = keys(b, m, k)
			}
			b.Run(fmt.Sprintf("%s/spans=%d", c.name, size), func(b *testing.B) {
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					next, _ := m.Update(keyMsg(c.keys[i%len(c.keys)]))
					m = next.(Model)
					i++
				}
			})
		}
	}
}
