package gymsim

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Start-up stages. venv_setup, interpreter_start and uvicorn_startup are
// the fixed stages of Gym's start-up timeline; the stages between are the
// server's own.
var serverStages = []string{"venv_setup", "interpreter_start", "load_config", "build_app", "uvicorn_startup"}

// supervisorStages are the driver's own start-up stages under gym.startup.
var supervisorStages = []string{"load_config", "spawn_servers", "wait_for_servers"}

// startServers brings the servers up the way Gym's driver does: it
// "spawns" each one, the server serves, and the driver probes GET / until it
// answers. In G3 with startup on the driver also traces it: gym.startup, a
// gym.startup.server span per server from spawn to first answered probe,
// whose traceparent the server receives (through its environment in Gym)
// to parent its own gym.server.startup tree, reported just before serving
// with the stages' real timestamps. The root ends, and so is exported,
// last.
func (f *Fleet) startServers() {
	d := f.driver
	tracing := f.variant.Startup && d.on(GroupStartup)
	t0 := f.startedAt
	rootCtx, root := context.Background(), noSpan
	if tracing {
		rootCtx, root = d.start(rootCtx, d.lens, GroupStartup, -1, "gym.startup", trace.SpanKindInternal, trace.WithTimestamp(t0))
	}
	marks := []time.Time{t0}
	mark := func() { marks = append(marks, time.Now()) }
	mark() // load_config
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
	mark() // spawn_servers
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
	mark() // wait_for_servers
	if !tracing {
		return
	}
	for i, name := range supervisorStages {
		_, sp := d.start(rootCtx, d.lens, GroupStartup, -1, "gym.startup."+name, trace.SpanKindInternal,
			trace.WithTimestamp(marks[i]), trace.WithAttributes(attribute.String("nemo.gym.startup.stage", name)))
		sp.End(trace.WithTimestamp(marks[i+1]))
	}
	root.End(trace.WithTimestamp(marks[len(marks)-1]))
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
