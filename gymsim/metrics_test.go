package gymsim

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestConcurrencyMetric runs the fleet against a loopback OTLP/HTTP sink:
// the agent exports the queue-wait histogram only in G1c with concurrency
// on, and the semaphore makes rollouts really wait when slots are fewer than
// rollouts in flight.
func TestConcurrencyMetric(t *testing.T) {
	tests := []struct {
		name        string
		variant     string
		spec        string
		wantMetrics bool
	}{
		{"G1c per_rollout exports it", "G1c", "per_rollout", true},
		{"G1c concurrency alone", "G1c", "concurrency", true},
		{"G1c default creates no instrument", "G1c", "default", false},
		{"G1 has no such metric", "G1", "per_rollout", false},
		{"G2 has no such metric", "G2", "all", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			bodies := map[string]int{} // path -> requests
			var metricBody []byte
			sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				mu.Lock()
				bodies[r.URL.Path]++
				if r.URL.Path == "/v1/metrics" {
					metricBody = append(metricBody, b...)
				}
				mu.Unlock()
				w.Header().Set("Content-Type", "application/x-protobuf")
			}))
			defer sink.Close()
			f := runFleet(t, Config{Seed: 7, Variant: tc.variant, Spec: tc.spec, Rollouts: 12, Concurrency: 4, AgentSlots: 1,
				Latency: time.Millisecond, Protocol: "http", Endpoint: strings.TrimPrefix(sink.URL, "http://"),
				MetricInterval: time.Hour})
			st := f.Stats()
			if st.ExportErrors != 0 {
				t.Fatalf("export errors: %d (%s)", st.ExportErrors, st.LastExportError)
			}
			mu.Lock()
			defer mu.Unlock()
			if got := bodies["/v1/metrics"] > 0; got != tc.wantMetrics {
				t.Errorf("metric requests %d, want some: %v", bodies["/v1/metrics"], tc.wantMetrics)
			}
			// With one slot and a long interval, Shutdown's flush exports
			// one cumulative point.
			want := int64(0)
			if tc.wantMetrics {
				want = 1
				if !strings.Contains(string(metricBody), QueueWaitMetric) {
					t.Errorf("metric export lacks %s", QueueWaitMetric)
				}
			}
			if st.MetricPoints != want {
				t.Errorf("MetricPoints = %d, want %d", st.MetricPoints, want)
			}
		})
	}
}

// TestAgentSemaphoreWaits checks the wait is real: with one slot, rollouts
// run one at a time, so a few waited.
func TestAgentSemaphoreWaits(t *testing.T) {
	s := make(semaphore, 1)
	if d := s.acquire(); d > 50*time.Millisecond {
		t.Errorf("free slot waited %v", d)
	}
	done := make(chan time.Duration)
	go func() { done <- s.acquire() }()
	time.Sleep(20 * time.Millisecond)
	s.release()
	if d := <-done; d < 15*time.Millisecond {
		t.Errorf("second acquire waited %v, want about 20ms", d)
	}
	s.release()
	var none semaphore
	if d := none.acquire(); d != 0 {
		t.Errorf("nil semaphore waited %v", d)
	}
	none.release()
}
