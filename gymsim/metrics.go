package gymsim

import (
	"context"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
)

// defaultMetricInterval is the periodic reader's interval when
// Config.MetricInterval is 0: as short as the span batcher's default delay,
// so a live view sees the metric within seconds, while a short fleet run
// exports only its final flush and its point count stays reproducible.
const defaultMetricInterval = 5 * time.Second

// QueueWaitMetric is the histogram G1c's agent records, per request, of the
// time spent waiting on its concurrency semaphore.
const QueueWaitMetric = "gym.concurrency.queue_wait_duration_ms"

// semaphore bounds the requests a process serves at once, as Gym's
// concurrency semaphores do. A nil semaphore never waits.
type semaphore chan struct{}

// acquire takes a slot and returns how long the caller waited for it.
func (s semaphore) acquire() time.Duration {
	if s == nil {
		return 0
	}
	t0 := time.Now()
	s <- struct{}{}
	return time.Since(t0)
}

func (s semaphore) release() {
	if s != nil {
		<-s
	}
}

// meters are one process's instruments, as Gym and the FastAPI
// instrumentation create them, with their descriptions as they spell them. A nil *meters records nothing: no OTLP
// exporter, or telemetry off in the process.
type meters struct {
	mp *sdkmetric.MeterProvider
	// nemo-lens's (scope nemo.lens).
	rolloutDuration, verifyDuration metric.Float64Histogram
	verifySuccess                   metric.Float64Gauge
	serversActive                   metric.Int64Gauge
	startupDuration, stageDuration  metric.Float64Histogram
	queueWait                       metric.Float64Histogram
	// The FastAPI instrumentation's, only with server on.
	serverDuration            metric.Float64Histogram
	requestSize, responseSize metric.Int64Histogram
	activeRequests            metric.Int64UpDownCounter

	mu               sync.Mutex
	nVerified, nGood int
}

// newMeters builds the process's MeterProvider and the instruments its role
// records, when it has telemetry and the fleet exports OTLP: Gym's console
// metric records are not simulated.
func (f *Fleet) newMeters(ctx context.Context, res *resource.Resource, p *proc) (*meters, error) {
	if !p.telemetry {
		return nil, nil
	}
	var (
		exp sdkmetric.Exporter
		err error
	)
	ep := f.cfg.Endpoint
	switch f.cfg.Protocol {
	case "grpc":
		opts := []otlpmetricgrpc.Option{otlpmetricgrpc.WithInsecure()}
		if strings.Contains(ep, "://") {
			opts = append(opts, otlpmetricgrpc.WithEndpointURL(ep))
		} else {
			opts = append(opts, otlpmetricgrpc.WithEndpoint(ep))
		}
		exp, err = otlpmetricgrpc.New(ctx, opts...)
	case "http":
		opts := []otlpmetrichttp.Option{otlpmetrichttp.WithInsecure()}
		if strings.Contains(ep, "://") {
			opts = append(opts, otlpmetrichttp.WithEndpointURL(ep))
		} else {
			opts = append(opts, otlpmetrichttp.WithEndpoint(ep))
		}
		exp, err = otlpmetrichttp.New(ctx, opts...)
	default:
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	every := f.cfg.MetricInterval
	if every <= 0 {
		every = defaultMetricInterval
	}
	m := &meters{mp: sdkmetric.NewMeterProvider(
		sdkmetric.WithResource(res),
		sdkmetric.WithReader(sdkmetric.NewPeriodicReader(&countingMetricExporter{Exporter: exp, f: f}, sdkmetric.WithInterval(every))),
	)}
	lens := m.mp.Meter("nemo.lens")
	hist := func(name, desc string) metric.Float64Histogram {
		h, e := lens.Float64Histogram(name, metric.WithUnit("ms"), metric.WithDescription(desc))
		if err == nil {
			err = e
		}
		return h
	}
	switch p.role {
	case RoleDriver:
		m.serversActive, err = lens.Int64Gauge("gym.servers.active", metric.WithDescription("Number of active Gym servers."))
		if f.variant.Startup {
			m.startupDuration = hist("gym.server.startup_duration_ms", "Wall-clock time from spawning one server to its first answered health probe.")
		}
	case RoleAgent:
		m.rolloutDuration = hist("gym.rollout.duration_ms", "Rollout collection duration in milliseconds.")
		if f.variant.QueueWaitMetric && p.on(GroupConcurrency) {
			m.queueWait = hist(QueueWaitMetric, "time a request waited on a concurrency semaphore")
		}
	case RoleResources:
		m.verifyDuration = hist("gym.verify.duration_ms", "Verification endpoint duration in milliseconds.")
		var e error
		m.verifySuccess, e = lens.Float64Gauge("gym.verify.success_rate", metric.WithDescription("Fraction of successful verifications."))
		if err == nil {
			err = e
		}
	}
	if f.variant.Startup && p.role != RoleDriver {
		m.stageDuration = hist("gym.server.startup_stage_duration_ms", "Wall-clock time of one stage of a server's startup, from spawn to the call to uvicorn.run.")
	}
	if p.role != RoleDriver && p.on(GroupServer) {
		fa := m.mp.Meter(scopeFastAPI, metric.WithInstrumentationVersion(contribVersion), metric.WithSchemaURL(fastAPISchema))
		var e1, e2, e3, e4 error
		m.serverDuration, e1 = fa.Float64Histogram("http.server.duration", metric.WithUnit("ms"), metric.WithDescription("Measures the duration of inbound HTTP requests."))
		m.requestSize, e2 = fa.Int64Histogram("http.server.request.size", metric.WithUnit("By"), metric.WithDescription("Measures the size of HTTP request messages (compressed)."))
		m.responseSize, e3 = fa.Int64Histogram("http.server.response.size", metric.WithUnit("By"), metric.WithDescription("measures the size of HTTP response messages (compressed)."))
		m.activeRequests, e4 = fa.Int64UpDownCounter("http.server.active_requests", metric.WithUnit("{request}"), metric.WithDescription("Number of active HTTP server requests."))
		for _, e := range []error{e1, e2, e3, e4} {
			if err == nil {
				err = e
			}
		}
	}
	if err != nil {
		_ = m.mp.Shutdown(ctx)
		return nil, err
	}
	return m, nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// requestStarted and requestEnded record the FastAPI instrumentation's
// metrics of one request: common are the active-requests attributes, full
// the others'.
func (m *meters) requestStarted(ctx context.Context, common []attribute.KeyValue) {
	if m == nil || m.activeRequests == nil {
		return
	}
	m.activeRequests.Add(ctx, 1, metric.WithAttributes(common...))
}

func (m *meters) requestEnded(ctx context.Context, common, full []attribute.KeyValue, took time.Duration, in, out int) {
	if m == nil || m.activeRequests == nil {
		return
	}
	m.activeRequests.Add(ctx, -1, metric.WithAttributes(common...))
	attrs := metric.WithAttributes(full...)
	m.serverDuration.Record(ctx, ms(took), attrs)
	m.requestSize.Record(ctx, int64(in), attrs)
	m.responseSize.Record(ctx, int64(out), attrs)
}

func (m *meters) rollout(ctx context.Context, took time.Duration) {
	if m != nil && m.rolloutDuration != nil {
		m.rolloutDuration.Record(ctx, ms(took))
	}
}

func (m *meters) queueWaited(ctx context.Context, took time.Duration) {
	if m != nil && m.queueWait != nil {
		m.queueWait.Record(ctx, ms(took))
	}
}

func (m *meters) verified(ctx context.Context, took time.Duration, rewarded bool) {
	if m == nil || m.verifyDuration == nil {
		return
	}
	m.verifyDuration.Record(ctx, ms(took))
	m.mu.Lock()
	m.nVerified++
	if rewarded {
		m.nGood++
	}
	rate := float64(m.nGood) / float64(m.nVerified)
	m.mu.Unlock()
	m.verifySuccess.Record(ctx, rate)
}

func (m *meters) serversUp(ctx context.Context, n int) {
	if m != nil && m.serversActive != nil {
		m.serversActive.Record(ctx, int64(n))
	}
}

func (m *meters) serverStarted(ctx context.Context, took time.Duration, name, stype string) {
	if m != nil && m.startupDuration != nil {
		m.startupDuration.Record(ctx, ms(took), metric.WithAttributes(attribute.String("nemo.gym.server.name", name), attribute.String("nemo.gym.server.type", stype)))
	}
}

func (m *meters) stage(ctx context.Context, took time.Duration, stage, name, stype string) {
	if m != nil && m.stageDuration != nil {
		m.stageDuration.Record(ctx, ms(took), metric.WithAttributes(attribute.String("nemo.gym.server.name", name),
			attribute.String("nemo.gym.server.type", stype), attribute.String("nemo.gym.startup.stage", stage), attribute.Bool("nemo.gym.server.worker", false)))
	}
}

func (m *meters) shutdown(ctx context.Context) error {
	if m == nil {
		return nil
	}
	return m.mp.Shutdown(ctx)
}

// countingMetricExporter counts the data points each successful export
// carried (the fleet's metric ground truth), the queue-wait points apart,
// and counts failures with the span export errors.
type countingMetricExporter struct {
	sdkmetric.Exporter
	f *Fleet
}

func (e *countingMetricExporter) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	if err := e.Exporter.Export(ctx, rm); err != nil {
		e.f.exportErrors.Add(1)
		e.f.lastErr.Store(err.Error())
		return nil
	}
	n, q := 0, 0
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			k := 0
			switch d := m.Data.(type) {
			case metricdata.Histogram[float64]:
				k = len(d.DataPoints)
			case metricdata.Histogram[int64]:
				k = len(d.DataPoints)
			case metricdata.Sum[int64]:
				k = len(d.DataPoints)
			case metricdata.Sum[float64]:
				k = len(d.DataPoints)
			case metricdata.Gauge[int64]:
				k = len(d.DataPoints)
			case metricdata.Gauge[float64]:
				k = len(d.DataPoints)
			}
			n += k
			if m.Name == QueueWaitMetric {
				q += k
			}
		}
	}
	e.f.metricPoints.Add(int64(n))
	e.f.queueWaitPoints.Add(int64(q))
	return nil
}
