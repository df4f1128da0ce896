package receiver

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nemo-gym/gymtrace/model"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/encoding/protojson"
)

const queueWait = "gym.concurrency.queue_wait_duration_ms"

// metricsRequest builds an export request with one resource per entry of
// perResource, each a list of (name, points) metrics of varied kinds.
func metricsRequest(perResource ...[]namedPoints) *colmetrics.ExportMetricsServiceRequest {
	req := &colmetrics.ExportMetricsServiceRequest{}
	for _, ms := range perResource {
		sm := &metricspb.ScopeMetrics{}
		for i, m := range ms {
			mp := &metricspb.Metric{Name: m.name}
			switch i % 3 {
			case 0:
				hs := make([]*metricspb.HistogramDataPoint, m.points)
				for k := range hs {
					hs[k] = &metricspb.HistogramDataPoint{Count: uint64(k + 1)}
				}
				mp.Data = &metricspb.Metric_Histogram{Histogram: &metricspb.Histogram{DataPoints: hs}}
			case 1:
				mp.Data = &metricspb.Metric_Sum{Sum: &metricspb.Sum{DataPoints: fill(make([]*metricspb.NumberDataPoint, m.points))}}
			default:
				mp.Data = &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: fill(make([]*metricspb.NumberDataPoint, m.points))}}
			}
			sm.Metrics = append(sm.Metrics, mp)
		}
		req.ResourceMetrics = append(req.ResourceMetrics, &metricspb.ResourceMetrics{ScopeMetrics: []*metricspb.ScopeMetrics{sm}})
	}
	return req
}

type namedPoints struct {
	name   string
	points int
}

func TestMetricPointsByName(t *testing.T) {
	fixtureLine := func(t *testing.T) []byte {
		t.Helper()
		b, err := os.ReadFile("testdata/all.console.jsonl")
		if err != nil {
			t.Fatalf("read console fixture: %v", err)
		}
		for _, l := range bytes.Split(b, []byte{'\n'}) {
			if bytes.HasPrefix(l, []byte(`{"resource_metrics"`)) {
				return l
			}
		}
		t.Fatal("console fixture has no metric line")
		return nil
	}
	tests := []struct {
		name  string
		req   *colmetrics.ExportMetricsServiceRequest
		raw   func(t *testing.T) []byte // a JSON line instead of req
		want  map[string]int
		total int
	}{
		{name: "empty", req: &colmetrics.ExportMetricsServiceRequest{}, want: map[string]int{}},
		{name: "one histogram", req: metricsRequest([]namedPoints{{queueWait, 3}}),
			want: map[string]int{queueWait: 3}, total: 3},
		{name: "same name over two resources", req: metricsRequest(
			[]namedPoints{{queueWait, 2}, {"http.server.active_requests", 1}},
			[]namedPoints{{queueWait, 5}, {"x", 0}, {"y", 4}}),
			want: map[string]int{queueWait: 7, "http.server.active_requests": 1, "x": 0, "y": 4}, total: 12},
		{name: "console fixture metric line", raw: fixtureLine,
			want: map[string]int{"http.server.active_requests": 1}, total: 1},
	}
	for _, tc := range tests {
		for _, enc := range []string{"protobuf", "json"} {
			if tc.raw != nil && enc == "protobuf" {
				continue
			}
			t.Run(tc.name+"/"+enc, func(t *testing.T) {
				got := map[string]int{}
				fn := func(name []byte, points int) { got[string(name)] += points }
				var (
					n   int
					err error
				)
				switch {
				case tc.raw != nil:
					n, err = MetricPointsByNameJSON(tc.raw(t), fn)
				case enc == "json":
					b, merr := protojson.Marshal(tc.req)
					if merr != nil {
						t.Fatal(merr)
					}
					n, err = MetricPointsByNameJSON(b, fn)
				default:
					n, err = MetricPointsByName(marshal(t, tc.req), fn)
				}
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				if n != tc.total || fmt.Sprint(got) != fmt.Sprint(tc.want) {
					t.Errorf("got total %d %v, want %d %v", n, got, tc.total, tc.want)
				}
			})
		}
	}
}

func TestMetricPointsByNameMalformed(t *testing.T) {
	b := marshal(t, metricsRequest([]namedPoints{{"a", 2}}, []namedPoints{{"b", 3}}))
	calls := 0
	n, err := MetricPointsByName(b[:len(b)-2], func([]byte, int) { calls++ })
	if err == nil || !strings.Contains(err.Error(), "resource_metrics[1]") {
		t.Errorf("err = %v, want one naming resource_metrics[1]", err)
	}
	if n != 2 || calls != 1 {
		t.Errorf("counted %d points in %d calls before the error, want 2 in 1", n, calls)
	}
}

// TestMetricPointsByNameAllocs holds the walk to no allocation at all.
func TestMetricPointsByNameAllocs(t *testing.T) {
	b := marshal(t, metricsRequest([]namedPoints{{queueWait, 50}, {"b", 20}, {"c", 5}}))
	sum := 0
	allocs := testing.AllocsPerRun(50, func() {
		if _, err := MetricPointsByName(b, func(_ []byte, p int) { sum += p }); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("%.1f allocations per walk, want 0", allocs)
	}
}

// TestServerCountsMetricsByName sends a raw request over each transport and
// a malformed one, which must count nothing.
func TestServerCountsMetricsByName(t *testing.T) {
	srv, st := startServer(t, Config{}, model.Options{})
	ga, ha := srv.Addrs()
	good := marshal(t, metricsRequest([]namedPoints{{queueWait, 4}, {"other.metric", 1}}))
	js, err := protojson.Marshal(metricsRequest([]namedPoints{{queueWait, 2}}))
	if err != nil {
		t.Fatal(err)
	}
	conn := dialRaw(t, ga)
	if err := conn.Invoke(context.Background(), "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export", &rawRequest{b: good}, &colmetrics.ExportMetricsServiceResponse{}); err != nil {
		t.Fatalf("grpc export: %v", err)
	}
	for _, c := range []struct {
		ctype string
		body  []byte
		code  int
	}{
		{"application/x-protobuf", good, 200},
		{"application/json", js, 200},
		{"application/x-protobuf", good[:len(good)-2], 400},
	} {
		resp, err := http.Post("http://"+ha+"/v1/metrics", c.ctype, bytes.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.code {
			t.Errorf("POST %s (%d bytes) = %d, want %d", c.ctype, len(c.body), resp.StatusCode, c.code)
		}
	}
	st.Sync()
	s := st.Snapshot()
	if s.Metrics[queueWait] != 10 || s.Metrics["other.metric"] != 2 || len(s.Metrics) != 2 || s.Stats.MetricPoints != 12 {
		t.Errorf("Metrics = %v, points %d; want %s:10 other.metric:2, 12", s.Metrics, s.Stats.MetricPoints, queueWait)
	}
}

// TestMetricExportersEndToEnd records a histogram with the OTel Go metric
// SDK and exports it with the real OTLP metric exporters over both
// transports; the store must see the metric by name with every point.
func TestMetricExportersEndToEnd(t *testing.T) {
	for _, tr := range []string{"grpc", "http"} {
		t.Run(tr, func(t *testing.T) {
			srv, st := startServer(t, Config{}, model.Options{})
			ga, ha := srv.Addrs()
			ctx := context.Background()
			var (
				exp sdkmetric.Exporter
				err error
			)
			if tr == "grpc" {
				exp, err = otlpmetricgrpc.New(ctx, otlpmetricgrpc.WithEndpoint(ga), otlpmetricgrpc.WithInsecure())
			} else {
				exp, err = otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpoint(ha), otlpmetrichttp.WithInsecure())
			}
			if err != nil {
				t.Fatal(err)
			}
			// A long interval: only the flush on Shutdown exports, so the
			// counts are exact.
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp, sdkmetric.WithInterval(time.Hour))))
			m := mp.Meter("test")
			h, err := m.Float64Histogram(queueWait, metric.WithUnit("ms"))
			if err != nil {
				t.Fatal(err)
			}
			c, err := m.Int64Counter("requests")
			if err != nil {
				t.Fatal(err)
			}
			for i := range 10 {
				h.Record(ctx, float64(i), metric.WithAttributeSet(attrSet(i%3)))
				c.Add(ctx, 1)
			}
			if err := mp.Shutdown(ctx); err != nil {
				t.Fatalf("meter provider shutdown: %v", err)
			}
			st.Sync()
			s := st.Snapshot()
			// Three attribute sets make three histogram points; one counter point.
			if s.Metrics[queueWait] != 3 || s.Metrics["requests"] != 1 || s.Stats.MetricPoints != 4 {
				t.Errorf("Metrics = %v, points %d; want %s:3 requests:1, 4", s.Metrics, s.Stats.MetricPoints, queueWait)
			}
		})
	}
}

func attrSet(agent int) attribute.Set { return attribute.NewSet(attribute.Int("agent", agent)) }

func BenchmarkMetricPointsByName(b *testing.B) {
	ms := make([]namedPoints, 0, 20)
	for i := range 20 {
		ms = append(ms, namedPoints{fmt.Sprintf("metric.%d", i), 10})
	}
	body := marshal(b, metricsRequest(ms, ms))
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	sum := 0
	for b.Loop() {
		n, err := MetricPointsByName(body, func(_ []byte, p int) { sum += p })
		if err != nil || n != 400 {
			b.Fatalf("n=%d err=%v", n, err)
		}
	}
}
