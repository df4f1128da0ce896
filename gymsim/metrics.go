package gymsim

import (
	"context"
	"strings"
	"time"

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

// newMeterProvider builds the process's MeterProvider and its queue-wait
// histogram when the variant records it, the concurrency group is on and
// the fleet exports OTLP; otherwise it returns nils and no instrument
// exists, as a Gym process with concurrency off creates none.
func (f *Fleet) newMeterProvider(ctx context.Context, res *resource.Resource, p *proc) (*sdkmetric.MeterProvider, metric.Float64Histogram, error) {
	if !f.variant.QueueWaitMetric || !p.on(GroupConcurrency) {
		return nil, nil, nil
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
		// Console and none: Gym's console metric lines are not simulated.
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	every := f.cfg.MetricInterval
	if every <= 0 {
		every = defaultMetricInterval
	}
	mp := sdkmetric.NewMeterProvider(
		sdkmetric.WithResource(res),
		sdkmetric.WithReader(sdkmetric.NewPeriodicReader(&countingMetricExporter{Exporter: exp, f: f}, sdkmetric.WithInterval(every))),
	)
	h, err := mp.Meter("nemo_gym").Float64Histogram(QueueWaitMetric,
		metric.WithUnit("ms"),
		metric.WithDescription("time a request waited on a concurrency semaphore"))
	if err != nil {
		_ = mp.Shutdown(ctx)
		return nil, nil, err
	}
	return mp, h, nil
}

// countingMetricExporter counts the queue-wait points each successful
// export carried (the fleet's metric ground truth) and counts failures with
// the span export errors.
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
	n := 0
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if h, ok := m.Data.(metricdata.Histogram[float64]); ok && m.Name == QueueWaitMetric {
				n += len(h.DataPoints)
			}
		}
	}
	e.f.metricPoints.Add(int64(n))
	return nil
}
