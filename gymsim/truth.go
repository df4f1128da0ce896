package gymsim

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// TruthSpan is one span the fleet emitted, as the emitter knows it: the
// group whose gate let it exist and the rollout it was made for, from the
// fleet's own bookkeeping, never from span attributes.
type TruthSpan struct {
	TraceID  trace.TraceID
	SpanID   trace.SpanID
	ParentID trace.SpanID // zero for a root
	Name     string
	Kind     trace.SpanKind
	Service  string // service.name of the emitting process
	Role     string // driver, agent, model or resources
	Scope    string // instrumentation scope
	// Group is the Gym group that gated the span (GroupAIOHTTP for the
	// aiohttp instrumentation's spans, which none gates).
	Group string
	// Rollout is the rollout's index, -1 for run-level traffic (health
	// probes, /aggregate_metrics, gym.job, start-up spans).
	Rollout int
	// RolloutID is Gym's id of the rollout ("3-0"), "" for run-level
	// traffic.
	RolloutID  string
	Status     codes.Code
	Start, End time.Time
	// Callee is the server name of the process a CLIENT span called
	// (e.g. policy_model); "" for other spans and calls outside the fleet.
	Callee string
}

// IsRolloutTraffic reports whether the span belongs to a rollout.
func (s *TruthSpan) IsRolloutTraffic() bool { return s.Rollout >= 0 }

// spanMeta is what a span site knows and the SDK does not keep.
type spanMeta struct {
	group   string
	rollout int
	callee  string
}

// truthLog records ended spans. It is a SpanProcessor on every provider;
// span sites note each span's group and rollout when they start it.
type truthLog struct {
	record  bool
	perTask int // rollouts per task, for the rollout ids
	spans   atomic.Int64

	mu    sync.Mutex
	meta  map[trace.SpanID]spanMeta
	truth []TruthSpan
	per   map[string]int64 // spans per service
}

func newTruthLog(record bool, perTask int) *truthLog {
	return &truthLog{record: record, perTask: perTask, meta: map[trace.SpanID]spanMeta{}, per: map[string]int64{}}
}

// note remembers the group and rollout of a span just started.
func (t *truthLog) note(id trace.SpanID, g string, rollout int) {
	if !t.record || !id.IsValid() {
		return
	}
	t.mu.Lock()
	t.meta[id] = spanMeta{group: g, rollout: rollout}
	t.mu.Unlock()
}

// noteCallee remembers the process a CLIENT span just started calls.
func (t *truthLog) noteCallee(id trace.SpanID, callee string) {
	if !t.record || callee == "" || !id.IsValid() {
		return
	}
	t.mu.Lock()
	m := t.meta[id]
	m.callee = callee
	t.meta[id] = m
	t.mu.Unlock()
}

// processor returns the SpanProcessor for the process named service.
func (t *truthLog) processor(service, role string) sdktrace.SpanProcessor {
	return &truthProcessor{t: t, service: service, role: role}
}

type truthProcessor struct {
	t             *truthLog
	service, role string
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
	m, ok := t.meta[id]
	if !ok {
		m.rollout = -1
	}
	delete(t.meta, id)
	ts := TruthSpan{
		TraceID:  s.SpanContext().TraceID(),
		SpanID:   id,
		ParentID: s.Parent().SpanID(),
		Name:     s.Name(),
		Kind:     s.SpanKind(),
		Service:  p.service,
		Role:     p.role,
		Scope:    s.InstrumentationScope().Name,
		Group:    m.group,
		Rollout:  m.rollout,
		Status:   s.Status().Code,
		Start:    s.StartTime(),
		End:      s.EndTime(),
		Callee:   m.callee,
	}
	if m.rollout >= 0 {
		ts.RolloutID = rolloutID(m.rollout, t.perTask)
	}
	t.truth = append(t.truth, ts)
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

// truthLine is one line of a truth file, in the format of the real-Gym
// captures' truth.
type truthLine struct {
	TraceID          string  `json:"trace_id"`
	SpanID           string  `json:"span_id"`
	ParentSpanID     *string `json:"parent_span_id"`
	Name             string  `json:"name"`
	Kind             string  `json:"kind"`
	Service          string  `json:"service"`
	Role             string  `json:"role"`
	Scope            string  `json:"scope"`
	Group            string  `json:"group"`
	Rollout          *int    `json:"rollout"`
	IsRolloutTraffic bool    `json:"is_rollout_traffic"`
	Status           string  `json:"status"`
	StartNS          int64   `json:"start_ns"`
	EndNS            int64   `json:"end_ns"`
}

var statusNames = map[codes.Code]string{codes.Unset: "UNSET", codes.Ok: "OK", codes.Error: "ERROR"}

// WriteTruth writes spans as JSON lines, one per span, in the real
// captures' truth format.
func WriteTruth(w io.Writer, spans []TruthSpan) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	for i := range spans {
		s := &spans[i]
		l := truthLine{
			TraceID: s.TraceID.String(), SpanID: s.SpanID.String(), Name: s.Name,
			Kind: strings.ToUpper(s.Kind.String()), Service: s.Service, Role: s.Role,
			Scope: s.Scope, Group: s.Group, IsRolloutTraffic: s.IsRolloutTraffic(), Status: statusNames[s.Status],
			StartNS: s.Start.UnixNano(), EndNS: s.End.UnixNano(),
		}
		if s.ParentID.IsValid() {
			p := s.ParentID.String()
			l.ParentSpanID = &p
		}
		if s.Rollout >= 0 {
			r := s.Rollout
			l.Rollout = &r
		}
		if err := enc.Encode(&l); err != nil {
			return err
		}
	}
	return bw.Flush()
}
