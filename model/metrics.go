package model

import (
	"maps"
	"sync"
	"sync/atomic"
)

// MaxMetricNames bounds the distinct metric names the store counts one by
// one; points of any further name are summed under OtherMetrics, so a sender
// that invents names cannot grow the store without bound.
const MaxMetricNames = 256

// OtherMetrics is the Snapshot.Metrics key that sums the points of metric
// names past MaxMetricNames.
const OtherMetrics = "other"

// metricCounts counts data points per metric name. Receivers call add from
// their handler goroutines; the writer copies the counts at publication, and
// only when they changed since the last copy.
type metricCounts struct {
	mu     sync.Mutex
	counts map[string]int64 // guarded by mu
	gen    atomic.Uint64    // bumped on every change, read without mu
}

func (m *metricCounts) add(name string, points int64) {
	if points == 0 {
		return
	}
	m.mu.Lock()
	if m.counts == nil {
		m.counts = make(map[string]int64)
	}
	if _, ok := m.counts[name]; !ok && len(m.counts) >= MaxMetricNames {
		name = OtherMetrics
	} else if !ok {
		// The caller's string may alias a request buffer that is reused.
		name = cloneString(name)
	}
	m.counts[name] += points
	m.gen.Add(1)
	m.mu.Unlock()
}

// snapshot returns a copy of the counts and the generation it reflects.
func (m *metricCounts) snapshot() (map[string]int64, uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.counts), m.gen.Load()
}

func cloneString(s string) string { return string(append([]byte(nil), s...)) }

// CountMetric records points data points received for the metric name, in
// addition to the totals given to Count. At most MaxMetricNames names are
// kept apart; later names are summed under OtherMetrics. Safe to call from
// any goroutine; the counts appear in Snapshot.Metrics at the next
// publication.
func (s *Store) CountMetric(name string, points int64) {
	s.metricNames.add(name, points)
}
