package whatif

import (
	"github.com/nemo-gym/gymtrace/gate/groups"
	"testing"
	"time"

	"github.com/nemo-gym/gymtrace/model"
)

// Numbers worked out by hand from threeRollouts (filter_test.go): span i
// starts i ms after the first; durations as listed there.
func TestLatency(t *testing.T) {
	snap := filterCapture(t, threeRollouts)
	eng := NewEngine(groups.Default())
	ms := int64(time.Millisecond)
	find := func(rows []LatencyRow, k string) LatencyRow {
		for _, r := range rows {
			if r.Key == k {
				return r
			}
		}
		t.Fatalf("no row %q", k)
		return LatencyRow{}
	}
	tests := []struct {
		name     string
		rollouts []*model.Rollout
		rows     func(*Latency) []LatencyRow
		key      string
		want     LatencyRow
	}{
		// 40, 2000, 60 ms.
		{"model calls, all", snap.Rollouts, func(l *Latency) []LatencyRow { return l.ByName }, "gym.model.responses",
			LatencyRow{Count: 3, P50: 60 * ms, P90: 2000 * ms, P99: 2000 * ms, Max: 2000 * ms, Total: 2100 * ms, Self: 2100 * ms}},
		// 900 (child 1..851: self 50), 3000 (child 4..2904: self 100),
		// 500 (children 8..28 and 9..69, one union 8..69: self 439).
		{"POST /run, all", snap.Rollouts, func(l *Latency) []LatencyRow { return l.ByName }, "POST /run",
			LatencyRow{Count: 3, P50: 900 * ms, P90: 3000 * ms, P99: 3000 * ms, Max: 3000 * ms, Total: 4400 * ms, Self: 589 * ms}},
		// server: the three POST /run and the failing get_weather (30 ms).
		{"server group", snap.Rollouts, func(l *Latency) []LatencyRow { return l.ByGroup }, "server",
			LatencyRow{Count: 4, Errors: 1, P50: 500 * ms, P90: 3000 * ms, P99: 3000 * ms, Max: 3000 * ms, Total: 4430 * ms, Self: 619 * ms}},
		{"by service", snap.Rollouts, func(l *Latency) []LatencyRow { return l.ByService }, "nemo-gym/example_tools",
			LatencyRow{Count: 2, Errors: 2, P50: 20 * ms, P90: 30 * ms, P99: 30 * ms, Max: 30 * ms, Total: 50 * ms, Self: 50 * ms}},
		{"one rollout", snap.Rollouts[1:2], func(l *Latency) []LatencyRow { return l.ByName }, "gym.model.responses",
			LatencyRow{Count: 1, P50: 2000 * ms, P90: 2000 * ms, P99: 2000 * ms, Max: 2000 * ms, Total: 2000 * ms, Self: 2000 * ms}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := find(tt.rows(eng.Latency(snap, tt.rollouts)), tt.key)
			got.Key, got.Group = "", 0
			if got != tt.want {
				t.Errorf("%s:\n got %+v\nwant %+v", tt.key, got, tt.want)
			}
		})
	}
	l := eng.Latency(snap, snap.Rollouts)
	if l.Spans != 10 || l.Rollouts != 3 || l.ByName[0].Key != "POST /run" {
		t.Errorf("spans %d rollouts %d, first row %q (want the longest total first)", l.Spans, l.Rollouts, l.ByName[0].Key)
	}
}
