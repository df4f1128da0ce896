package gymsim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	colmetric "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/protobuf/proto"

	"github.com/nemo-gym/gymtrace/internal/testfile"
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
			// Every process exports its other metrics whatever the spec.
			if bodies["/v1/metrics"] == 0 || st.MetricPoints == 0 {
				t.Errorf("%d metric requests, %d points", bodies["/v1/metrics"], st.MetricPoints)
			}
			// With one slot and a long interval, Shutdown's flush exports
			// one cumulative point.
			want := int64(0)
			if tc.wantMetrics {
				want = 1
			}
			if got := strings.Contains(string(metricBody), QueueWaitMetric); got != tc.wantMetrics {
				t.Errorf("metric export names %s: %v, want %v", QueueWaitMetric, got, tc.wantMetrics)
			}
			if st.QueueWaitPoints != want {
				t.Errorf("QueueWaitPoints = %d, want %d", st.QueueWaitPoints, want)
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

// TestMetricNamesAsGym: a G1 run under `all` exports, per process, the
// metrics the real G1 capture's console logs hold (nemo-lens's and the
// FastAPI instrumentation's), with the same scopes.
func TestMetricNamesAsGym(t *testing.T) {
	want := map[string]bool{}
	files, _ := filepath.Glob("../testdata/real-gym/s41-obs0-iso/all/console/*.log.gz")
	for _, name := range files {
		for _, line := range testfile.Lines(t, name) {
			if !bytes.HasPrefix(line, []byte(`{"resource_metrics"`)) {
				continue
			}
			var rec struct {
				ResourceMetrics []struct {
					Resource struct {
						Attributes map[string]any `json:"attributes"`
					} `json:"resource"`
					ScopeMetrics []struct {
						Scope struct {
							Name string `json:"name"`
						} `json:"scope"`
						Metrics []struct {
							Name string `json:"name"`
						} `json:"metrics"`
					} `json:"scope_metrics"`
				} `json:"resource_metrics"`
			}
			if err := json.Unmarshal(line, &rec); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			for _, rm := range rec.ResourceMetrics {
				for _, sm := range rm.ScopeMetrics {
					for _, m := range sm.Metrics {
						want[fmt.Sprintf("%v %s %s", rm.Resource.Attributes["service.name"], sm.Scope.Name, m.Name)] = true
					}
				}
			}
		}
	}
	if len(want) == 0 {
		t.Fatal("no metric records in the real capture")
	}
	var mu sync.Mutex
	got := map[string]bool{}
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/v1/metrics" {
			var req colmetric.ExportMetricsServiceRequest
			if err := proto.Unmarshal(b, &req); err != nil {
				t.Errorf("metric request: %v", err)
			}
			mu.Lock()
			for _, rm := range req.ResourceMetrics {
				svc := ""
				for _, kv := range rm.Resource.Attributes {
					if kv.Key == "service.name" {
						svc = kv.Value.GetStringValue()
					}
				}
				for _, sm := range rm.ScopeMetrics {
					for _, m := range sm.Metrics {
						got[fmt.Sprintf("%s %s %s", svc, sm.Scope.Name, m.Name)] = true
					}
				}
			}
			mu.Unlock()
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer sink.Close()
	runFleet(t, Config{Seed: 41, Spec: "all", Rollouts: 6, Concurrency: 4, Protocol: "http",
		Endpoint: strings.TrimPrefix(sink.URL, "http://"), MetricInterval: time.Hour})
	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d metrics by process and scope: %v", len(got), sorted(got))
	if !reflect.DeepEqual(got, want) {
		t.Errorf("metrics exported\n  %v\nreal Gym\n  %v", sorted(got), sorted(want))
	}
}

func sorted(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
