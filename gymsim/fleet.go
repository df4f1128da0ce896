package gymsim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// Config configures a Fleet.
type Config struct {
	// Seed decides every rollout's shape; rollout n is Gym's task
	// n/RolloutsPerTask, repeat n%RolloutsPerTask (rollout id
	// "<task>-<repeat>").
	Seed int64
	// RolloutsPerTask is Gym's num_repeats: rollouts of each task, run one
	// after the other; 0 means 1.
	RolloutsPerTask int
	// EvidenceDir, when set, is where the driver writes Gym's rollout files
	// as it runs (see evidence.go): the dispatched rows, each outcome as its
	// rollout completes, the aggregate metrics after each run, the health
	// verdicts and, with Observability, the model-call captures. Files of an
	// earlier run there are started anew.
	EvidenceDir string
	// Variant is Gym's telemetry variant: G1 (the default), G1c, G2 or G3.
	Variant string
	// Spec is the span_groups value every process reads, unless
	// ProcessSpecs overrides it; blank means default, as in Gym.
	Spec string
	// ProcessSpecs overrides Spec for single processes, keyed by server
	// name (see ProcessNames) or role (driver, agent, model, resources).
	// In Gym each process reads its own config, so one process can run
	// with a different span_groups than the others: that is how
	// cross-process joins break in practice.
	ProcessSpecs map[string]string
	// Observability is Gym's observability_enabled: rollout ids on the
	// rollout's semantic and CLIENT spans, /ng-rollout/{id}/ URL prefixes.
	Observability bool
	// AIOHTTP runs the aiohttp client instrumentation in every calling
	// process, as NeMo-RL does.
	AIOHTTP bool
	// Standalone runs the driver without telemetry, as collect_rollouts
	// on its own does.
	Standalone bool
	// ContextLeak is the share of requests that inherit the previous
	// request's span on a reused keep-alive connection, in [0, 1].
	ContextLeak float64
	// DisconnectRace is the share of 200 answers whose caller is gone
	// before the answer's last (empty) body message, in [0, 1]; only G3
	// has the disconnect listener that notices. Its receive then carries
	// http.disconnect and that message is never sent, so a request has
	// one http send fewer. In real runs it depends on timing: a few
	// requests per run.
	DisconnectRace float64
	// Rollouts to run; 0 runs until Shutdown.
	Rollouts int
	// RunSize is the number of rollouts per collection run (one gym.job
	// and one /aggregate_metrics each). 0 means all Rollouts in one run,
	// or 10 when running forever.
	RunSize int
	// Rate limits rollout starts per second; 0 starts them as fast as
	// Concurrency allows.
	Rate float64
	// Concurrency bounds rollouts in flight; 0 means 8.
	Concurrency int
	// Protocol is "grpc" or "http" (OTLP to Endpoint), "console" (Python
	// SDK JSON lines to Console) or "none" (no exporter; truth only).
	Protocol string
	// Endpoint is host:port or a URL of the OTLP receiver (loopback).
	Endpoint string
	// Console receives the console lines of every process.
	Console io.Writer
	// RecordTruth keeps every emitted span for Truth.
	RecordTruth bool
	// Latency is the unit of simulated work: a model call takes a few of
	// them, a tool call a fraction. 0 means no sleeping at all.
	Latency time.Duration
	// BatchTimeout is the batch span processor's delay; 0 keeps the SDK
	// default (5 s), as Gym does.
	BatchTimeout time.Duration
	// RunID is nemo.run.id; empty derives one from the seed.
	RunID string
	// AgentSlots is the agent's concurrency semaphore: /run calls served at
	// once. Rollouts past it wait, and in G1c with concurrency on the wait
	// is recorded as gym.concurrency.queue_wait_duration_ms. 0 means half
	// of Concurrency, rounded up.
	AgentSlots int
	// MetricInterval is the metric reader's export interval; 0 means 5 s.
	// Shutdown exports what is left either way.
	MetricInterval time.Duration
	// ModelBackend puts a model server behind the model server's handler
	// whose spans carry token usage: BackendVLLM or BackendGateway; ""
	// for none (Gym's model server answers itself, as in every capture
	// of Gym alone).
	ModelBackend string
}

// Stats are the fleet's counters.
type Stats struct {
	Started   int64 // rollouts started
	Completed int64 // rollouts answered (ok or failed)
	Failed    int64 // rollouts whose /run answered an error
	Requests  int64 // HTTP requests served by the fleet's servers
	Spans     int64 // spans ended (handed to the exporters)
	// ExportErrors counts failed exports; LastExportError is the latest.
	ExportErrors    int64
	LastExportError string
	// Services counts spans per service.name.
	Services map[string]int64
	// MetricPoints counts the data points of successful metric exports
	// (OTLP only); QueueWaitPoints those of
	// gym.concurrency.queue_wait_duration_ms (G1c with concurrency on).
	MetricPoints, QueueWaitPoints int64
}

// Fleet is a running simulated fleet. Its methods are safe for concurrent use.
type Fleet struct {
	cfg     Config
	variant *Variant
	truth   *truthLog

	driver, agent, model, resources *proc
	procs                           []*proc
	backend                         *backend  // nil without Config.ModelBackend
	evidence                        *evidence // nil without Config.EvidenceDir

	console *lockedWriter

	startedAt time.Time
	stopping  chan struct{}
	stopOnce  sync.Once
	done      chan struct{}

	started, completed, failed, requests atomic.Int64
	exportErrors, metricPoints           atomic.Int64
	queueWaitPoints                      atomic.Int64
	lastErr                              atomic.Value // string

	sandboxMu sync.Mutex
	sandboxes map[int]bool // rollout -> sandbox started
}

// Start builds the four processes, starts their servers and the driver.
// The fleet runs until Rollouts are done (see Wait) or Shutdown.
func Start(ctx context.Context, cfg Config) (*Fleet, error) {
	v, err := LookupVariant(cfg.Variant)
	if err != nil {
		return nil, err
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 8
	}
	if cfg.AgentSlots <= 0 {
		cfg.AgentSlots = (cfg.Concurrency + 1) / 2
	}
	if cfg.RolloutsPerTask < 0 {
		return nil, fmt.Errorf("rollouts per task %d: must be 0 (one) or more", cfg.RolloutsPerTask)
	}
	if cfg.RolloutsPerTask == 0 {
		cfg.RolloutsPerTask = 1
	}
	if cfg.Rollouts < 0 {
		return nil, fmt.Errorf("rollouts %d: must be 0 (forever) or more", cfg.Rollouts)
	}
	if cfg.Rate < 0 {
		return nil, fmt.Errorf("rate %g: must be 0 (unlimited) or more", cfg.Rate)
	}
	if cfg.ContextLeak < 0 || cfg.ContextLeak > 1 {
		return nil, fmt.Errorf("context leak %g: must be between 0 and 1", cfg.ContextLeak)
	}
	if cfg.DisconnectRace < 0 || cfg.DisconnectRace > 1 {
		return nil, fmt.Errorf("disconnect race %g: must be between 0 and 1", cfg.DisconnectRace)
	}
	if cfg.RunSize <= 0 {
		cfg.RunSize = cfg.Rollouts
		if cfg.RunSize == 0 {
			cfg.RunSize = 10
		}
	}
	if cfg.RunID == "" {
		cfg.RunID = fmt.Sprintf("sim%d", cfg.Seed)
	}
	names := processNames(v)
	for name := range cfg.ProcessSpecs {
		if processRole(v, name) == "" {
			return nil, fmt.Errorf("process spec %q: no such process (want one of %s, or a role: driver, agent, model, resources)", name, strings.Join(names, ", "))
		}
	}
	switch cfg.Protocol {
	case "grpc", "http":
		if cfg.Endpoint == "" {
			return nil, fmt.Errorf("protocol %s: no endpoint", cfg.Protocol)
		}
		if err := loopbackOnly(cfg.Endpoint); err != nil {
			return nil, err
		}
	case "console":
		if cfg.Console == nil {
			return nil, errors.New("protocol console: no writer")
		}
	case "none":
	default:
		return nil, fmt.Errorf("protocol %q: want grpc, http, console or none", cfg.Protocol)
	}
	f := &Fleet{
		cfg:       cfg,
		variant:   v,
		truth:     newTruthLog(cfg.RecordTruth, cfg.RolloutsPerTask),
		startedAt: time.Now(),
		stopping:  make(chan struct{}),
		done:      make(chan struct{}),
		sandboxes: map[int]bool{},
	}
	if cfg.Console != nil {
		f.console = &lockedWriter{w: cfg.Console}
	}
	mk := func(role, name, stype string, telemetry, serve bool) *proc {
		if err != nil {
			return nil
		}
		var p *proc
		p, err = newProc(ctx, f, role, name, stype, cfg.specOf(v, role), telemetry, serve)
		if p != nil {
			f.procs = append(f.procs, p)
		}
		return p
	}
	f.driver = mk(RoleDriver, v.Driver, v.Driver, !cfg.Standalone, false)
	f.agent = mk(RoleAgent, agentName, serverTypes[RoleAgent], true, true)
	f.model = mk(RoleModel, modelName, serverTypes[RoleModel], true, true)
	f.resources = mk(RoleResources, resourcesName, serverTypes[RoleResources], true, true)
	if err == nil && cfg.ModelBackend != "" {
		f.backend, err = startBackend(ctx, f)
	}
	if err == nil && cfg.EvidenceDir != "" {
		f.evidence, err = openEvidence(cfg.EvidenceDir, cfg.Observability, cfg.RolloutsPerTask)
	}
	if err != nil {
		f.closeAll(ctx)
		return nil, err
	}
	f.routes()
	go f.drive()
	return f, nil
}

// ProcessNames returns the server names of the G1 fleet's processes, the
// keys of Config.ProcessSpecs, in call order: driver, agent, model,
// resources.
func ProcessNames() []string { return processNames(variants["G1"]) }

// ProcessNamesOf returns the server names of the fleet's processes under
// variant v, in call order.
func ProcessNamesOf(v *Variant) []string { return processNames(v) }

// CanonicalProcess maps a server name or role to the server name under v.
func CanonicalProcess(v *Variant, name string) (string, bool) {
	role := processRole(v, name)
	if role == "" {
		return "", false
	}
	return processNames(v)[slices.Index([]string{RoleDriver, RoleAgent, RoleModel, RoleResources}, role)], true
}

func processNames(v *Variant) []string {
	return []string{v.Driver, agentName, modelName, resourcesName}
}

// processRole maps a server name or role to its role; "" for neither.
func processRole(v *Variant, name string) string {
	switch name {
	case RoleDriver, v.Driver, "orchestrator", "supervisor":
		return RoleDriver
	case RoleAgent, agentName:
		return RoleAgent
	case RoleModel, modelName:
		return RoleModel
	case RoleResources, resourcesName:
		return RoleResources
	}
	return ""
}

// specOf returns the span_groups value the process of role reads.
func (c *Config) specOf(v *Variant, role string) string {
	for name, s := range c.ProcessSpecs {
		if processRole(v, name) == role {
			return s
		}
	}
	return c.Spec
}

// Warnings returns what each process logged about its span_groups (an
// unknown name switching telemetry off, or dropped), by server name.
func (f *Fleet) Warnings() map[string]string {
	out := map[string]string{}
	for _, p := range f.procs {
		if p.res.Warning != "" {
			out[p.name] = p.res.Warning
		}
	}
	return out
}

// Variant returns the variant the fleet runs.
func (f *Fleet) Variant() *Variant { return f.variant }

// loopbackOnly refuses endpoints off this machine: the fleet is a local toy.
func loopbackOnly(ep string) error {
	host := ep
	if strings.Contains(ep, "://") {
		u, err := url.Parse(ep)
		if err != nil {
			return fmt.Errorf("endpoint %q: %w", ep, err)
		}
		host = u.Host
	}
	if i := strings.LastIndexByte(host, ':'); i >= 0 {
		host = host[:i]
	}
	host = strings.Trim(host, "[]")
	switch {
	case host == "localhost", host == "::1", strings.HasPrefix(host, "127."):
		return nil
	}
	return fmt.Errorf("endpoint %q: only loopback addresses are allowed", ep)
}

// newExporter makes one process's exporter, wrapped so export errors are
// counted in Stats instead of logged (a log line would tear the TUI).
func (f *Fleet) newExporter(ctx context.Context) (sdktrace.SpanExporter, error) {
	var exp sdktrace.SpanExporter
	var err error
	ep := f.cfg.Endpoint
	switch f.cfg.Protocol {
	case "grpc":
		opts := []otlptracegrpc.Option{otlptracegrpc.WithInsecure()}
		if strings.Contains(ep, "://") {
			opts = append(opts, otlptracegrpc.WithEndpointURL(ep))
		} else {
			opts = append(opts, otlptracegrpc.WithEndpoint(ep))
		}
		exp, err = otlptrace.New(ctx, &orderedClient{otlptracegrpc.NewClient(opts...)})
	case "http":
		opts := []otlptracehttp.Option{otlptracehttp.WithInsecure()}
		if strings.Contains(ep, "://") {
			opts = append(opts, otlptracehttp.WithEndpointURL(ep))
		} else {
			opts = append(opts, otlptracehttp.WithEndpoint(ep))
		}
		exp, err = otlptrace.New(ctx, &orderedClient{otlptracehttp.NewClient(opts...)})
	case "console":
		exp = newConsoleExporterShared(f.console, resourceOrder)
	default:
		exp = discard{}
	}
	if err != nil {
		return nil, err
	}
	return &countingExporter{SpanExporter: exp, f: f}, nil
}

// orderedClient sends each resource's attributes in the order Gym builds
// them (resourceOrder) rather than the SDK's sorted order.
type orderedClient struct{ otlptrace.Client }

func (c *orderedClient) UploadTraces(ctx context.Context, rss []*tracepb.ResourceSpans) error {
	for _, rs := range rss {
		if rs.Resource != nil {
			orderAttributes(rs.Resource.Attributes)
		}
	}
	return c.Client.UploadTraces(ctx, rss)
}

// orderAttributes sorts kvs in place by resourceOrder; unknown keys last.
func orderAttributes(kvs []*commonpb.KeyValue) {
	rank := func(k string) int {
		for i, o := range resourceOrder {
			if string(o) == k {
				return i
			}
		}
		return len(resourceOrder)
	}
	sort.SliceStable(kvs, func(i, j int) bool { return rank(kvs[i].Key) < rank(kvs[j].Key) })
}

type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }

type countingExporter struct {
	sdktrace.SpanExporter
	f *Fleet
}

func (e *countingExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if err := e.SpanExporter.ExportSpans(ctx, spans); err != nil {
		e.f.exportErrors.Add(1)
		e.f.lastErr.Store(err.Error())
	}
	return nil
}

// Wait blocks until every configured rollout has been answered (or the fleet
// was shut down). With Rollouts 0 it returns only after Shutdown.
func (f *Fleet) Wait() { <-f.done }

// Done is closed when the driver has finished.
func (f *Fleet) Done() <-chan struct{} { return f.done }

// Shutdown stops starting rollouts, waits for those in flight, stops the
// servers and flushes every exporter. Spans still queued are exported before
// it returns, unless ctx ends first.
func (f *Fleet) Shutdown(ctx context.Context) error {
	f.stopOnce.Do(func() { close(f.stopping) })
	select {
	case <-f.done:
	case <-ctx.Done():
	}
	return f.closeAll(ctx)
}

func (f *Fleet) closeAll(ctx context.Context) error {
	var errs []error
	// Close the clients' idle keep-alive connections first: a server counts
	// a connection that never carried a request as busy for 5 s.
	for _, p := range f.procs {
		p.httpClient.CloseIdleConnections()
	}
	for _, p := range f.procs {
		if err := p.shutdownHTTP(ctx); err != nil {
			errs = append(errs, fmt.Errorf("%s server: %w", p.name, err))
		}
	}
	if f.evidence != nil {
		if err := f.evidence.close(); err != nil {
			errs = append(errs, err)
		}
	}
	// The servers are done with their calls to the backend.
	if f.backend != nil {
		if err := f.backend.shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", backendService, err))
		}
	}
	for _, p := range f.procs {
		if err := p.tp.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("%s tracer provider: %w", p.name, err))
		}
		// The final collection exports the points recorded since the last
		// periodic export.
		if p.meters != nil {
			if err := p.meters.shutdown(ctx); err != nil {
				errs = append(errs, fmt.Errorf("%s meter provider: %w", p.name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// plan is rollout n's plan under the fleet's seed.
func (f *Fleet) plan(n int) rolloutPlan { return planRollout(f.cfg.Seed, n, f.cfg.RolloutsPerTask) }

// Truth returns every span the fleet emitted so far, in end order. It is
// empty unless Config.RecordTruth is set. The caller owns the slice.
func (f *Fleet) Truth() []TruthSpan { return f.truth.snapshot() }

// Stats returns the fleet's counters.
func (f *Fleet) Stats() Stats {
	s := Stats{
		Started:         f.started.Load(),
		Completed:       f.completed.Load(),
		Failed:          f.failed.Load(),
		Requests:        f.requests.Load(),
		Spans:           f.truth.spans.Load(),
		ExportErrors:    f.exportErrors.Load(),
		MetricPoints:    f.metricPoints.Load(),
		QueueWaitPoints: f.queueWaitPoints.Load(),
		Services:        f.truth.services(),
	}
	if v, ok := f.lastErr.Load().(string); ok {
		s.LastExportError = v
	}
	return s
}

// Addrs returns the base URLs of the agent, model and resources servers.
func (f *Fleet) Addrs() []string {
	return []string{f.agent.base, f.model.base, f.resources.base}
}
