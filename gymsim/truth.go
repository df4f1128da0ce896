package gymsim

import (
	"context"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/nemo-gym/gymtrace/gate"
)

// TruthSpan is one span the fleet emitted, as the emitter knows it: the
// group whose gate let it exist and the rollout it was made for.
type TruthSpan struct {
	TraceID   trace.TraceID
	SpanID    trace.SpanID
	ParentID  trace.SpanID // zero for a root
	Name      string
	Kind      trace.SpanKind
	Service   string // service.name of the emitting process
	Group     gate.Group
	RolloutID string // "" for gym.job
	Status    codes.Code
	// Callee is the server name of the process a CLIENT span called
	// (e.g. policy_model); "" for other spans and calls outside the fleet.
	Callee string
}

// spanMeta is what a span site knows and the SDK does not keep.
type spanMeta struct {
	group  gate.Group
	rid    string
	callee string
}

// truthLog records ended spans. It is a SpanProcessor on every provider;
// span sites note each span's group and rollout when they start it.
type truthLog struct {
	record bool
	spans  atomic.Int64

	mu    sync.Mutex
	meta  map[trace.SpanID]spanMeta
	truth []TruthSpan
	per   map[string]int64 // spans per service
}

func newTruthLog(record bool) *truthLog {
	return &truthLog{record: record, meta: map[trace.SpanID]spanMeta{}, per: map[string]int64{}}
}

// note remembers the group and rollout of a span just started.
func (t *truthLog) note(id trace.SpanID, g gate.Group, rid string) {
	if !t.record {
		return
	}
	t.mu.Lock()
	t.meta[id] = spanMeta{group: g, rid: rid}
	t.mu.Unlock()
}

// noteCallee remembers the process a CLIENT span just started calls.
func (t *truthLog) noteCallee(id trace.SpanID, callee string) {
	if !t.record || callee == "" {
		return
	}
	t.mu.Lock()
	m := t.meta[id]
	m.callee = callee
	t.meta[id] = m
	t.mu.Unlock()
}

// processor returns the SpanProcessor for the process named service.
func (t *truthLog) processor(service string) sdktrace.SpanProcessor {
	return &truthProcessor{t: t, service: service}
}

type truthProcessor struct {
	t       *truthLog
	service string
}

func (p *truthProcessor) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

func (p *truthProcessor) OnEnd(s sdktrace.ReadOnlySpan) {
	t := p.t
	t.spans.Add(1)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.per[p.service]++
	if !t.record {
		return
	}
	id := s.SpanContext().SpanID()
	m := t.meta[id]
	delete(t.meta, id)
	t.truth = append(t.truth, TruthSpan{
		TraceID:   s.SpanContext().TraceID(),
		SpanID:    id,
		ParentID:  s.Parent().SpanID(),
		Name:      s.Name(),
		Kind:      s.SpanKind(),
		Service:   p.service,
		Group:     m.group,
		RolloutID: m.rid,
		Status:    s.Status().Code,
		Callee:    m.callee,
	})
}

func (p *truthProcessor) Shutdown(context.Context) error   { return nil }
func (p *truthProcessor) ForceFlush(context.Context) error { return nil }

func (t *truthLog) snapshot() []TruthSpan {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]TruthSpan(nil), t.truth...)
}

func (t *truthLog) services() map[string]int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]int64, len(t.per))
	for k, v := range t.per {
		out[k] = v
	}
	return out
}
