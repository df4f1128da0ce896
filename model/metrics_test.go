package model

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

func TestCountMetric(t *testing.T) {
	type call struct {
		name   string
		points int64
	}
	many := make([]call, 0, MaxMetricNames+3)
	for i := range MaxMetricNames + 3 {
		many = append(many, call{fmt.Sprintf("m%03d", i), 2})
	}
	tests := []struct {
		name  string
		calls []call
		want  map[string]int64 // a subset of keys checked exactly
		names int              // distinct keys expected
	}{
		{"none", nil, map[string]int64{}, 0},
		{"one name summed", []call{{"gym.concurrency.queue_wait_duration_ms", 3}, {"gym.concurrency.queue_wait_duration_ms", 4}},
			map[string]int64{"gym.concurrency.queue_wait_duration_ms": 7}, 1},
		{"zero points ignored", []call{{"a", 0}, {"b", 1}}, map[string]int64{"b": 1}, 1},
		{"past the bound goes to other", many,
			map[string]int64{"m000": 2, fmt.Sprintf("m%03d", MaxMetricNames-1): 2, OtherMetrics: 6}, MaxMetricNames + 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := NewStore(Options{})
			defer st.Close()
			for _, c := range tc.calls {
				st.CountMetric(c.name, c.points)
			}
			st.Sync()
			got := st.Snapshot().Metrics
			if got == nil {
				t.Fatal("Snapshot().Metrics is nil")
			}
			if len(got) != tc.names {
				t.Errorf("%d names, want %d: %v", len(got), tc.names, got)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("Metrics[%q] = %d, want %d", k, got[k], v)
				}
			}
		})
	}
}

// TestMetricsSnapshotImmutable checks that a published map is never written
// again: later counts land in a new map, and an unchanged one is shared.
func TestMetricsSnapshotImmutable(t *testing.T) {
	st := NewStore(Options{})
	defer st.Close()
	st.CountMetric("x", 1)
	st.Sync()
	first := st.Snapshot().Metrics
	st.Sync()
	if same := st.Snapshot().Metrics; fmt.Sprintf("%p", same) != fmt.Sprintf("%p", first) {
		t.Errorf("unchanged counts were copied anew")
	}
	st.CountMetric("x", 5)
	st.Sync()
	if first["x"] != 1 {
		t.Errorf("published map changed: x = %d, want 1", first["x"])
	}
	if got := st.Snapshot().Metrics["x"]; got != 6 {
		t.Errorf("x = %d, want 6", got)
	}
}

// TestCountMetricPublishesAlone checks that per-name counts alone, with no
// spans and no Count call, reach readers through the periodic publication.
func TestCountMetricPublishesAlone(t *testing.T) {
	st := NewStore(Options{PublishEvery: time.Millisecond})
	defer st.Close()
	st.CountMetric("only", 2)
	deadline := time.After(5 * time.Second)
	for st.Snapshot().Metrics["only"] != 2 {
		select {
		case <-st.Changed():
		case <-deadline:
			t.Fatal("per-name count never published")
		}
	}
}

// TestCountMetricRace has writers count while readers read snapshots.
func TestCountMetricRace(t *testing.T) {
	st := NewStore(Options{PublishEvery: time.Millisecond})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				st.CountMetric(fmt.Sprintf("w%d.%d", w, i%80), 1)
			}
		}()
	}
	stop := make(chan struct{})
	var rd sync.WaitGroup
	rd.Add(1)
	go func() {
		defer rd.Done()
		for {
			var sum int64
			for _, v := range st.Snapshot().Metrics {
				sum += v
			}
			select {
			case <-stop:
				return
			default:
			}
		}
	}()
	wg.Wait()
	close(stop)
	rd.Wait()
	st.Close()
	var sum int64
	m := st.Snapshot().Metrics
	for _, v := range m {
		sum += v
	}
	if sum != 2000 || len(m) != MaxMetricNames+1 {
		t.Errorf("sum %d over %d names, want 2000 over %d", sum, len(m), MaxMetricNames+1)
	}
}
