// Package contract holds a capture to the telemetry of a golden capture of
// the same Gym variant, for CI: hops that joined must still join, spans and
// bytes per rollout must stay within a tolerance, every span name must be
// classified by some group, no orphan spans may appear and no attribute may
// carry a secret.
//
// It builds on the join check and what-if engine of gate/whatif and imports
// model and gate's stage packages only; never receiver, tui or the
// OpenTelemetry SDK.
package contract

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gate/rollouts"
	"github.com/nemo-gym/gymtrace/gate/whatif"
	"github.com/nemo-gym/gymtrace/model"
)

// DefaultTolerance is how far spans or bytes per rollout may drift from the
// baseline, as a fraction: 10 %.
const DefaultTolerance = 0.10

// Where is a process and a span name, the place a finding points at.
type Where struct {
	Service, Span string
}

// hopKey is a cross-process call: caller, callee, the request.
type hopKey struct {
	from, to, span string
}

// Profile is what a capture's telemetry looks like, as the contract reads
// it. Build it with Measure.
type Profile struct {
	Spans, Rollouts int
	Bytes           int64
	// SpansPerRollout and BytesPerRollout are over every span of the
	// capture, as preview's budget reads them.
	SpansPerRollout, BytesPerRollout float64
	// Broken are the join check's broken hops.
	Broken []whatif.BreakSum
	// Joined counts, per caller, callee and request, the calls whose
	// SERVER span sits under its CLIENT span.
	joined map[hopKey]int
	// Unclassified and Orphans count spans per place: spans no group
	// classifies, and spans of fragments whose parent never arrived.
	Unclassified, Orphans map[Where]int
	Secrets               []Secret
}

// Secret is an attribute whose key or value looks like a credential. Its
// value is never kept: Sample shows its first characters only.
type Secret struct {
	Where
	Key    string
	Reason string
	Sample string
	Count  int
}

// Measure profiles snap with eng.
func Measure(eng *whatif.Engine, snap *model.Snapshot) *Profile {
	reg := eng.Registry()
	rep := eng.Preview(snap, reg.All())
	p := &Profile{Spans: rep.Result.Spans, Bytes: rep.Result.Bytes, Rollouts: rep.Input.Rollouts,
		joined: map[hopKey]int{}, Unclassified: map[Where]int{}, Orphans: map[Where]int{}}
	if p.Rollouts > 0 {
		p.SpansPerRollout = float64(p.Spans) / float64(p.Rollouts)
		p.BytesPerRollout = float64(p.Bytes) / float64(p.Rollouts)
	}
	// Files are complete: nothing is pending.
	p.Broken = eng.Check(snap, time.Time{}, 0).HopSummary()
	st := rep.Structure
	in := snap.Interner()
	secrets := map[secretKey]*Secret{}
	scan := func(sp *model.Span, service string) {
		name := in.Str(sp.Name)
		look := func(a model.Attrs) {
			a.Each(in, func(k string, v model.Value) bool {
				if reason, ok := LooksSecret(k, v.String()); ok {
					key := secretKey{Where{service, name}, k, reason}
					s := secrets[key]
					if s == nil {
						s = &Secret{Where: key.where, Key: k, Reason: reason, Sample: redact(v.String())}
						secrets[key] = s
					}
					s.Count++
				}
				return true
			})
		}
		look(sp.Attrs)
		if sp.Extra != nil {
			for _, ev := range sp.Extra.Events {
				look(ev.Attrs)
			}
		}
	}
	for _, r := range eng.Pieces(snap) {
		sim := eng.SimulateRollout(st.Snap, r, reg.All())
		for fi, f := range r.Fragments {
			if f.Orphan() && len(f.Spans) > 0 {
				top := &f.Spans[0]
				p.Orphans[Where{snap.ServiceName(top.Resource), in.Str(top.Name)}] += len(f.Spans)
			}
			for i := range f.Spans {
				sp := &f.Spans[i]
				service := snap.ServiceName(sp.Resource)
				if fi < len(sim.Frags) && i < len(sim.Frags[fi].Group) && sim.Frags[fi].Group[i] == groups.Unclassified {
					p.Unclassified[Where{service, in.Str(sp.Name)}]++
				}
				if sp.Parent >= 0 && int(sp.Parent) < len(f.Spans) {
					parent := &f.Spans[sp.Parent]
					// A call joins when the callee's span sits under the
					// caller's CLIENT span: across processes, or the agent
					// calling itself over HTTP.
					if parent.Kind == model.KindClient && (parent.Resource != sp.Resource || sp.Kind == model.KindServer) {
						p.joined[hopKey{snap.ServiceName(parent.Resource), service, rollouts.DisplayName(in, sp)}]++
					}
				}
				scan(sp, service)
			}
		}
	}
	for _, j := range snap.Jobs {
		for i := range j.Spans {
			scan(&j.Spans[i], snap.ServiceName(j.Spans[i].Resource))
		}
	}
	// Resource attributes once per process: a key in every span's resource
	// is one finding, counted by the spans it rides on.
	for id, n := range snap.Services {
		if n == 0 {
			continue
		}
		res := snap.Resource(model.ResourceID(id))
		service := in.Str(res.Service)
		res.Attrs.Each(in, func(k string, v model.Value) bool {
			if reason, ok := LooksSecret(k, v.String()); ok {
				key := secretKey{Where{service, "(resource)"}, k, reason}
				if secrets[key] == nil {
					secrets[key] = &Secret{Where: key.where, Key: k, Reason: reason, Sample: redact(v.String())}
				}
				secrets[key].Count += int(n)
			}
			return true
		})
	}
	for _, s := range secrets {
		p.Secrets = append(p.Secrets, *s)
	}
	sort.Slice(p.Secrets, func(i, j int) bool {
		a, b := p.Secrets[i], p.Secrets[j]
		return fmt.Sprint(a.Service, a.Span, a.Key, a.Reason) < fmt.Sprint(b.Service, b.Span, b.Key, b.Reason)
	})
	return p
}

// BrokenJoins counts the broken hops that are not context leaks.
func (p *Profile) BrokenJoins() int {
	n := 0
	for _, b := range p.Broken {
		if !b.Cause.Leak() {
			n++
		}
	}
	return n
}

type secretKey struct {
	where       Where
	key, reason string
}

// Kind is what a finding is about.
type Kind uint8

// Finding kinds, in the order a report lists them.
const (
	HopBroke     Kind = iota + 1 // a hop that joined in the baseline breaks
	SpansDrift                   // spans per rollout moved past the tolerance
	BytesDrift                   // bytes per rollout moved past the tolerance
	Unclassified                 // a span name no group classifies, not in the baseline
	Orphans                      // spans whose parent never arrived, not in the baseline
	SecretValue                  // an attribute that looks like a credential
)

// String names the kind as --json spells it.
func (k Kind) String() string {
	switch k {
	case HopBroke:
		return "hop_broke"
	case SpansDrift:
		return "spans_drift"
	case BytesDrift:
		return "bytes_drift"
	case Unclassified:
		return "unclassified_span"
	case Orphans:
		return "orphan_spans"
	case SecretValue:
		return "secret"
	}
	return "unknown"
}

// Finding is one breach of the contract. Which fields are set depends on
// Kind: Hop for HopBroke; Baseline, Current and Change for the drifts;
// Where and Count for names, orphans and secrets (BaselineCount too).
type Finding struct {
	Kind Kind
	Hop  whatif.BreakSum
	// JoinedBefore counts the hop's calls that joined in the baseline; 0
	// when the baseline never made the call.
	JoinedBefore int
	// BaselineShare and CurrentShare are the shares of rollouts the hop is
	// broken in.
	BaselineShare, CurrentShare float64
	Baseline, Current           float64
	Change                      float64 // (Current - Baseline) / Baseline
	Tolerance                   float64
	Where                       Where
	Count, BaselineCount        int
	Secret                      *Secret
}

// String is the finding in one sentence.
func (f Finding) String() string {
	switch f.Kind {
	case HopBroke:
		name := whatif.HopName(f.Hop, "->", func(s string) string { return s })
		was := "the baseline never made this call"
		switch {
		case f.BaselineShare > 0:
			was = fmt.Sprintf("broken in %.0f%% of the baseline's rollouts", 100*f.BaselineShare)
		case f.JoinedBefore > 0:
			was = fmt.Sprintf("joined in the baseline (%d %s)", f.JoinedBefore, plural(f.JoinedBefore, "call", "calls"))
		}
		return fmt.Sprintf("hop %s %s, now breaks x%d in %d %s: %s", name, was, f.Hop.Spans, f.Hop.Rollouts, plural(f.Hop.Rollouts, "rollout", "rollouts"), f.Hop.Reason)
	case SpansDrift, BytesDrift:
		what := "spans"
		if f.Kind == BytesDrift {
			what = "bytes"
		}
		return fmt.Sprintf("%s per rollout drift %+.1f%% (%.2f in the baseline, %.2f now), past the %.0f%% tolerance", what, 100*f.Change, f.Baseline, f.Current, 100*f.Tolerance)
	case Unclassified:
		return fmt.Sprintf("span %q of %s (x%d) is classified by no group: it is kept under every spec and no span_groups setting can switch it off (a groups file rule names its group)", f.Where.Span, f.Where.Service, f.Count)
	case Orphans:
		base := "the baseline has none"
		if f.BaselineCount > 0 {
			base = fmt.Sprintf("the baseline has %d", f.BaselineCount)
		}
		return fmt.Sprintf("%d orphan %s under %q of %s: their parent never arrived (an exporter dropped it, or the capture ended first); %s", f.Count, plural(f.Count, "span", "spans"), f.Where.Span, f.Where.Service, base)
	case SecretValue:
		s := f.Secret
		return fmt.Sprintf("attribute %s on %q of %s looks like a secret (%s): %q x%d; redact it before export", s.Key, s.Span, s.Service, s.Reason, s.Sample, s.Count)
	}
	return "unknown finding"
}

// Report is a capture held to a baseline.
type Report struct {
	Baseline, Current *Profile
	Tolerance         float64
	Findings          []Finding
	// Leaks are the capture's context leaks (whatif.CauseLeak), shown
	// beside the findings and never one of them.
	Leaks []whatif.BreakSum
}

// Pass reports whether the capture keeps the contract.
func (r *Report) Pass() bool { return len(r.Findings) == 0 }

// Compare holds cur to base. tolerance is the drift allowed in spans and
// bytes per rollout, and in the share of rollouts a known broken hop may
// newly break, as a fraction (DefaultTolerance when negative).
func Compare(base, cur *Profile, tolerance float64) *Report {
	if tolerance < 0 {
		tolerance = DefaultTolerance
	}
	r := &Report{Baseline: base, Current: cur, Tolerance: tolerance}
	share := func(p *Profile, b whatif.BreakSum) float64 {
		if p.Rollouts == 0 {
			return 0
		}
		return float64(b.Rollouts) / float64(p.Rollouts)
	}
	type brokeKey struct{ from, to, span, reason string }
	was := map[brokeKey]float64{}
	for _, b := range base.Broken {
		was[brokeKey{b.FromService, b.ToService, b.SpanName, b.Reason}] = share(base, b)
	}
	for _, b := range cur.Broken {
		// A carried-over request context is a server-side leak that gate
		// grafts back; whether a run shows one depends on timing, so it
		// is reported, never held against the contract.
		if b.Cause.Leak() {
			r.Leaks = append(r.Leaks, b)
			continue
		}
		old, known := was[brokeKey{b.FromService, b.ToService, b.SpanName, b.Reason}]
		now := share(cur, b)
		if known && now-old <= tolerance {
			continue
		}
		f := Finding{Kind: HopBroke, Hop: b, BaselineShare: old, CurrentShare: now, Tolerance: tolerance}
		f.JoinedBefore = base.joined[hopKey{b.FromService, b.ToService, b.SpanName}]
		if f.JoinedBefore == 0 {
			for k, n := range base.joined {
				if k.from == b.FromService && k.to == b.ToService {
					f.JoinedBefore += n
				}
			}
		}
		r.Findings = append(r.Findings, f)
	}
	drift := func(k Kind, b, c float64) {
		var change float64
		switch {
		case b == c:
			return
		case b == 0:
			change = math.Inf(1)
		default:
			change = (c - b) / b
		}
		if math.Abs(change) > tolerance {
			r.Findings = append(r.Findings, Finding{Kind: k, Baseline: b, Current: c, Change: change, Tolerance: tolerance})
		}
	}
	drift(SpansDrift, base.SpansPerRollout, cur.SpansPerRollout)
	drift(BytesDrift, base.BytesPerRollout, cur.BytesPerRollout)
	for _, w := range sortedWheres(cur.Unclassified) {
		if base.Unclassified[w] == 0 {
			r.Findings = append(r.Findings, Finding{Kind: Unclassified, Where: w, Count: cur.Unclassified[w]})
		}
	}
	for _, w := range sortedWheres(cur.Orphans) {
		if b := base.Orphans[w]; b == 0 || perRollout(cur.Orphans[w], cur.Rollouts) > perRollout(b, base.Rollouts)*(1+tolerance) {
			r.Findings = append(r.Findings, Finding{Kind: Orphans, Where: w, Count: cur.Orphans[w], BaselineCount: b})
		}
	}
	// A secret is a breach wherever it is: a golden capture that holds one
	// does not make it safe.
	for i := range cur.Secrets {
		s := cur.Secrets[i]
		r.Findings = append(r.Findings, Finding{Kind: SecretValue, Where: s.Where, Count: s.Count, Secret: &s})
	}
	sort.SliceStable(r.Findings, func(i, j int) bool { return r.Findings[i].Kind < r.Findings[j].Kind })
	return r
}

func perRollout(n, rollouts int) float64 {
	if rollouts == 0 {
		return float64(n)
	}
	return float64(n) / float64(rollouts)
}

func sortedWheres(m map[Where]int) []Where {
	out := make([]Where, 0, len(m))
	for w := range m {
		out = append(out, w)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Service != out[j].Service {
			return out[i].Service < out[j].Service
		}
		return out[i].Span < out[j].Span
	})
	return out
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
