package tui

import (
	"flag"
	"fmt"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/model"
)

var largeCopies = flag.Int("large-copies", 88, "copies of the real Gym run (5072 spans, 100 rollouts) in BenchmarkLargeKeys")

// largeKeys is what BenchmarkLargeKeys types, with the pause after each
// key: the statistics and their scope (a) twice round, then a filter typed
// at a brisk typing pace, half-typed terms included, and taken back.
var largeKeys = func() []struct {
	key, kind string
	pause     time.Duration
} {
	type k = struct {
		key, kind string
		pause     time.Duration
	}
	out := []k{{"t", "stats", time.Second}}
	for range 6 {
		out = append(out, k{"a", "scope", time.Second})
	}
	// Back to the list, whose / is the filter.
	out = append(out, k{"t", "stats", 300 * time.Millisecond}, k{"shift+tab", "tab", 300 * time.Millisecond}, k{"/", "filter", 300 * time.Millisecond})
	const typed = "status=error"
	for _, r := range typed {
		out = append(out, k{string(r), "filter", 120 * time.Millisecond})
	}
	out[len(out)-1].pause = 1500 * time.Millisecond
	for range typed {
		out = append(out, k{"backspace", "filter", 120 * time.Millisecond})
	}
	out[len(out)-1].pause = 1500 * time.Millisecond
	return append(out, k{"esc", "filter", time.Second})
}()

// BenchmarkLargeKeys is keys on a large capture: -large-copies copies of
// the real Gym run's request with fresh ids (88: 446k spans, 8,800
// rollouts), read as a file is (not live), the model run as Bubble Tea
// runs it (loop). A key's latency is from its arrival to the View after
// its Update, waits behind other messages included. scope-shown is from
// an a to the first View with that scope's figures; filter-applied from
// the last key of a pause in typing to the first View listing the rows
// of what was typed.
func BenchmarkLargeKeys(b *testing.B) {
	for b.Loop() {
		st := model.NewStore(model.Options{})
		b.Cleanup(st.Close)
		f := newFlood(b, st)
		f.fill(b, *largeCopies)
		v, _ := groups.DetectVariant(st.Snapshot())
		reg := v.Registry()
		m := New(Options{Source: st, Registry: reg, Current: reg.Resolve("").Set, Title: "large.jsonl",
			SnippetPath: os.DevNull})
		lp := newLoop()
		lat := latencies{}
		var mu sync.Mutex
		analysed := make(chan struct{}, 1)
		// What a key waits to be shown: the scope or the filter text.
		var scopeAt, filterAt time.Time
		var wantScope statsScope
		var wantFilter string
		var served sync.WaitGroup
		served.Add(1)
		go func() {
			defer served.Done()
			m = lp.serve(m, func(kind string, d time.Duration) {
				mu.Lock()
				lat[kind] = append(lat[kind], d)
				mu.Unlock()
			}, func(m Model, msg any) {
				if _, ok := msg.(analysisMsg); ok {
					select {
					case analysed <- struct{}{}:
					default:
					}
				}
				mu.Lock()
				defer mu.Unlock()
				ka, isKey := msg.(keyAt)
				if isKey && m.stats.opened && ka.km.String() == "a" {
					scopeAt, wantScope = ka.at, m.stats.scope
				}
				if !scopeAt.IsZero() && statsShown(m) == wantScope {
					lat["scope-shown"] = append(lat["scope-shown"], time.Since(scopeAt))
					scopeAt = time.Time{}
				}
				if isKey && ka.kind == "filter" {
					if v := m.rollouts.input.Value(); v != wantFilter {
						filterAt, wantFilter = ka.at, v
					}
				}
				if !filterAt.IsZero() && filterApplied(m) == wantFilter {
					lat["filter-applied"] = append(lat["filter-applied"], time.Since(filterAt))
					filterAt = time.Time{}
				}
			})
		}()
		lp.msgs <- tea.WindowSizeMsg{Width: 120, Height: 40}
		select {
		case <-analysed:
		case <-time.After(time.Minute):
			b.Fatal("no first analysis in a minute")
		}
		time.Sleep(500 * time.Millisecond)
		// The process's CPU over each kind of key, commands included: the
		// work a key starts, wherever it runs.
		cpu := map[string]time.Duration{}
		for _, k := range largeKeys {
			c0 := processCPU()
			lp.msgs <- keyAt{km: keyMsg(k.key), kind: k.kind, at: time.Now()}
			time.Sleep(k.pause)
			cpu[k.kind] += processCPU() - c0
		}
		close(lp.quit)
		served.Wait()
		lat.report(b, "")
		for kind, d := range cpu {
			b.ReportMetric(float64(d)/1e6, kind+"-cpu-ms")
		}
		lp.logBusy(b)
		b.ReportMetric(float64(len(st.Snapshot().Rollouts)), "rollouts")
		b.ReportMetric(float64(st.Snapshot().Stats.Stored), "spans")
		fmt.Fprintf(os.Stderr, "%d spans, %d rollouts\n", st.Snapshot().Stats.Stored, len(st.Snapshot().Rollouts))
	}
}

// processCPU is the process's CPU time, every thread's.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// statsShown is the scope whose figures the statistics show, numScopes
// while they wait for them.
func statsShown(m Model) statsScope {
	if m.stats.shown != m.stats.want {
		return numScopes
	}
	return m.stats.shown.scope
}

// filterApplied is the filter text whose rows the list shows.
func filterApplied(m Model) string {
	if len(m.rollouts.matchWant) > 0 || m.rollouts.filterErr != "" {
		return "\x00"
	}
	return m.rollouts.filter
}
