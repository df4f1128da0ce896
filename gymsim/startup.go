package gymsim

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// serverStages are a server's start-up stages under gym.server.startup, in
// the order a G3 server passes them from spawn to the call to uvicorn.run.
var serverStages = []string{"interpreter_start", "load_config", "init_server", "init_telemetry", "setup_webserver", "configure_app", "uvicorn_startup"}

// Supervisor stages under gym.startup, in order. The driver spawns the
// servers in spawn_servers and probes them in wait_for_servers; the head
// server and the model endpoints are not simulated, so their stages take
// no time, as they nearly do in a fleet whose model is one of its servers.
const (
	stageLoadConfig      = "load_config"
	stageInitTelemetry   = "init_telemetry"
	stageStartHead       = "start_head_server"
	stageSpawnServers    = "spawn_servers"
	stageWaitHead        = "wait_for_head_server"
	stageWaitServers     = "wait_for_servers"
	stageWaitModelEndpts = "wait_for_model_endpoints"
)

var supervisorStages = []string{stageLoadConfig, stageInitTelemetry, stageStartHead, stageSpawnServers, stageWaitHead, stageWaitServers, stageWaitModelEndpts}

// startServers brings the servers up the way Gym's driver does: it
// "spawns" each one, the server serves, and the driver probes GET / until it
// answers. In G3 with startup on the driver also traces it: gym.startup, a
// gym.startup.server span per server from spawn to first answered probe,
// whose traceparent the server receives (through its environment in Gym)
// to parent its own gym.server.startup tree, reported just before serving
// with the stages' real timestamps. The gym.startup.server spans end (and
// are exported) first, then the supervisor's stages, reported with their
// real timestamps once start-up is over, then the root.
func (f *Fleet) startServers() {
	d := f.driver
	tracing := f.variant.Startup && d.on(GroupStartup)
	t0 := f.startedAt
	rootCtx, root := context.Background(), noSpan
	if tracing {
		rootCtx, root = d.start(rootCtx, d.lens, GroupStartup, -1, "gym.startup", trace.SpanKindInternal, trace.WithTimestamp(t0))
	}
	// ends[stage] is when the stage ended; each starts where the one
	// before it ended.
	ends := map[string]time.Time{}
	mark := func(stage string) { ends[stage] = time.Now() }
	mark(stageLoadConfig)
	mark(stageInitTelemetry)
	mark(stageStartHead)
	type pending struct {
		p     *proc
		span  trace.Span
		spawn time.Time
	}
	var spawned []pending
	for _, p := range []*proc{f.agent, f.model, f.resources} {
		spawn := time.Now()
		sp := noSpan
		env := map[string]string{}
		if tracing {
			var sctx context.Context
			sctx, sp = d.start(rootCtx, d.lens, GroupStartup, -1, "gym.startup.server", trace.SpanKindInternal,
				trace.WithTimestamp(spawn), trace.WithAttributes(
					attribute.String("nemo.gym.server.name", p.name), attribute.String("nemo.gym.server.type", p.stype)))
			traceContext.Inject(sctx, propagation.MapCarrier(env))
		}
		p.reportStartup(spawn, env["traceparent"])
		p.serve()
		spawned = append(spawned, pending{p, sp, spawn})
	}
	mark(stageSpawnServers)
	mark(stageWaitHead)
	up := 0
	for _, s := range spawned {
		for try := 0; try < 50; try++ {
			if err := d.probe(s.p); err == nil {
				up++
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		s.span.End()
		d.meters.serverStarted(context.Background(), time.Since(s.spawn), s.p.name, s.p.stype)
	}
	d.meters.serversUp(context.Background(), up)
	mark(stageWaitServers)
	mark(stageWaitModelEndpts)
	if !tracing {
		return
	}
	from := t0
	for _, name := range supervisorStages {
		_, sp := d.start(rootCtx, d.lens, GroupStartup, -1, "gym.startup."+name, trace.SpanKindInternal,
			trace.WithTimestamp(from), trace.WithAttributes(attribute.String("nemo.gym.startup.stage", name)))
		sp.End(trace.WithTimestamp(ends[name]))
		from = ends[name]
	}
	root.End(trace.WithTimestamp(from))
}

// reportStartup emits the server's own start-up tree, retroactively, under
// the driver's span named by traceparent (none when started by hand).
func (p *proc) reportStartup(spawn time.Time, traceparent string) {
	if !p.f.variant.Startup || !p.telemetry {
		return
	}
	// The stages are contiguous from spawn; each takes a share of the
	// fleet's unit of work.
	unit := p.f.cfg.Latency / 4
	if unit <= 0 {
		unit = time.Microsecond
	}
	marks := []time.Time{spawn}
	for range serverStages {
		marks = append(marks, marks[len(marks)-1].Add(unit))
	}
	if wait := time.Until(marks[len(marks)-1]); wait > 0 {
		p.sleep(wait)
	}
	// The stage metrics are recorded whatever the span groups; the spans
	// only with startup on.
	for i, name := range serverStages {
		p.meters.stage(context.Background(), marks[i+1].Sub(marks[i]), name, p.name, p.stype)
	}
	if !p.on(GroupStartup) {
		return
	}
	ctx := context.Background()
	if traceparent != "" {
		ctx = traceContext.Extract(ctx, propagation.MapCarrier{"traceparent": traceparent})
	}
	attrs := []attribute.KeyValue{
		attribute.String("nemo.gym.server.name", p.name),
		attribute.Bool("nemo.gym.server.worker", false),
		attribute.String("nemo.gym.server.type", p.stype),
	}
	rctx, root := p.start(ctx, p.lens, GroupStartup, -1, "gym.server.startup", trace.SpanKindInternal,
		trace.WithTimestamp(spawn), trace.WithAttributes(append(attrs, attribute.Int("process.pid", pidOf()))...))
	for i, name := range serverStages {
		_, sp := p.start(rctx, p.lens, GroupStartup, -1, "gym.server.startup."+name, trace.SpanKindInternal,
			trace.WithTimestamp(marks[i]), trace.WithAttributes(append(attrs, attribute.Int("process.pid", pidOf()), attribute.String("nemo.gym.startup.stage", name))...))
		sp.End(trace.WithTimestamp(marks[i+1]))
	}
	root.End(trace.WithTimestamp(marks[len(marks)-1]))
}
