package tui

import (
	"fmt"
	"runtime"
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
	var batch model.Batch
	for i := 0; i < n; i++ {
		start := t0.UnixNano() + int64(i)*int64(50*time.Millisecond)
		batch, _ = bl.emit(batch, traceID(i), model.SpanID{}, start, rolloutTree(fmt.Sprintf("r%07d", i), turns, i%7 == 3))
		if len(batch.Spans) >= 50_000 {
			if err := bl.st.Add(batch); err != nil {
				b.Fatal(err)
			}
			batch = model.Batch{}
		}
	}
	if err := bl.st.Add(batch); err != nil {
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

// BenchmarkFilterUI is the UI goroutine's CPU for typing a filter and
// leaving it (/ e r r esc) at rest, with every message it brings on (the
// verdicts judged off the UI goroutine, the analyses for the new filter)
// installed: ui-cpu-ms is that thread's CPU in Update and View a sequence;
// the commands, run between, are not counted.
func BenchmarkFilterUI(b *testing.B) {
	for _, size := range benchSizes() {
		base := benchModel(b, size)
		b.Run(fmt.Sprintf("spans=%d", size), func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			m := base
			var cpu time.Duration
			msgs := 0
			for b.Loop() {
				for _, k := range []string{"/", "e", "r", "r", "esc"} {
					queue := []tea.Msg{keyMsg(k)}
					for len(queue) > 0 {
						msg := queue[0]
						queue = queue[1:]
						c0 := threadCPU()
						next, cmd := m.Update(msg)
						m = next.(Model)
						_ = m.View()
						cpu += threadCPU() - c0
						msgs++
						queue = append(queue, drain(cmd)...)
					}
				}
			}
			b.ReportMetric(float64(cpu)/1e6/float64(b.N), "ui-cpu-ms/op")
			b.ReportMetric(float64(msgs)/float64(b.N), "msgs/op")
		})
	}
}

// drain runs cmd and the commands of its batches, returning their
// messages but the timers that only schedule the next refresh.
func drain(cmd tea.Cmd) []tea.Msg {
	if cmd == nil {
		return nil
	}
	switch msg := cmd().(type) {
	case nil, refreshMsg, clockMsg, tea.QuitMsg:
		return nil
	case tea.BatchMsg:
		var out []tea.Msg
		for _, c := range msg {
			out = append(out, drain(c)...)
		}
		return out
	default:
		return []tea.Msg{msg}
	}
}
