package filter

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/nemo-gym/gymtrace/gate/evidence"
	"github.com/nemo-gym/gymtrace/gate/rollouts"
	"github.com/nemo-gym/gymtrace/model"
)

// Help is the filter syntax in a few lines, for help screens and
// usage text.
const Help = `terms separated by spaces must all hold (and):
  word            rollout id, service, span name, trace or span id contains word ("error": has errors)
  key=value       a span attribute (or its process's resource attribute) equals value
  key~text        ... contains text;  key!=value, key!~text: the same span differs
  key>N, key<=N   a numeric attribute compared (>, >=, <, <=)
  name=, service=, kind=, status=error|ok|unset, trace=, span=   the span's own fields
  dur>100ms       the span's duration (>, >=, <, <=, =, !=; units ns us ms s m h)
  rdur>2s         the rollout's duration, its first span's start to its last end
  id=, id~        the rollout id
  reward=0, reward<0.5, verdict=unhealthy, failure=http_error, task=12
                  what Gym's files say of the rollout (with --evidence)
  -term           no span of the rollout matches term
one span must satisfy every span term; quote values with spaces: name="POST /run"`

// Filter selects rollouts by their spans. Terms separated by spaces must all
// hold. Span terms (attributes, name, service, kind, status, dur) must all
// hold on one and the same span, as in Jaeger's tag search, so
// `service=policy_model dur>1s` finds rollouts with a slow model span rather
// than rollouts with some model span and some slow span. A term prefixed
// with '-' holds when no span of the rollout matches it. The zero Filter
// (and Parse("")) matches every rollout.
//
// A Filter is immutable and safe for concurrent use.
type Filter struct {
	text string
	// outcome looks up a rollout's evidence for the evidence terms; nil
	// until WithEvidence, and then those terms match no rollout.
	outcome func(id string) *evidence.Outcome
	pos     []term // must all hold on one span (or on the rollout, for rollout terms)
	neg     []term // each must match no span (or not the rollout)
}

// term is one parsed condition.
type term struct {
	field field
	key   string // attribute key for fieldAttr; lower-cased word for fieldWord
	op    op
	val   string // the value as given (compared case-insensitively)
	lower string // strings.ToLower(val)
	num   float64
	dur   int64 // nanoseconds, for fieldDur and fieldRDur
	kind  model.Kind
	stat  model.StatusCode
}

type field uint8

const (
	fieldWord field = iota // bare word: rollout id, service, span name
	fieldID                // rollout id
	fieldName
	fieldService
	fieldKind
	fieldStatus
	fieldTrace
	fieldSpan
	fieldDur
	fieldAttr
	fieldRDur // the rollout's duration
	// What Gym's files say of the rollout (gate/evidence).
	fieldReward
	fieldVerdict
	fieldFailure
	fieldTask
)

// rolloutLevel reports fields judged on the rollout, not on a span.
func (f field) rolloutLevel() bool {
	return f == fieldWord || f == fieldID || f == fieldRDur || f.evidence()
}

// evidence reports fields read from Gym's outcome files.
func (f field) evidence() bool { return f >= fieldReward }

type op uint8

const (
	opEq op = iota
	opNe
	opHas
	opHasNot
	opGt
	opGe
	opLt
	opLe
)

// ops in the order they are tried at one position: two-character
// operators before their one-character prefixes.
var ops = []struct {
	text string
	op   op
}{{"!=", opNe}, {"!~", opHasNot}, {">=", opGe}, {"<=", opLe}, {"=", opEq}, {"~", opHas}, {">", opGt}, {"<", opLt}}

var fieldNames = map[string]field{
	"id": fieldID, "rollout": fieldID, "name": fieldName, "service": fieldService, "kind": fieldKind,
	"status": fieldStatus, "trace": fieldTrace, "span": fieldSpan, "dur": fieldDur, "duration": fieldDur,
	"rdur": fieldRDur, "rollout_dur": fieldRDur,
	"reward": fieldReward, "verdict": fieldVerdict, "failure": fieldFailure, "failure_class": fieldFailure, "task": fieldTask,
}

var verdictValues = map[string]bool{"healthy": true, "unhealthy": true, "unobserved": true, "none": true}

var kindValues = map[string]model.Kind{
	"internal": model.KindInternal, "server": model.KindServer, "client": model.KindClient,
	"producer": model.KindProducer, "consumer": model.KindConsumer, "unspecified": model.KindUnspecified,
}

var statusValues = map[string]model.StatusCode{"error": model.StatusError, "ok": model.StatusOK, "unset": model.StatusUnset}

// Error is a filter that does not parse: which term, where, and why.
type Error struct {
	Term   string // the term as typed
	Column int    // 1-based column of the term in the filter text
	Reason string
}

func (e *Error) Error() string {
	return fmt.Sprintf("filter term %q (column %d): %s", e.Term, e.Column, e.Reason)
}

// Parse parses a filter (syntax: Help). The error is a
// *Error naming the first bad term.
func Parse(s string) (*Filter, error) {
	f := &Filter{text: strings.TrimSpace(s)}
	toks, err := splitTerms(s)
	if err != nil {
		return nil, err
	}
	for _, tk := range toks {
		neg := false
		raw := tk.text
		if len(raw) > 1 && raw[0] == '-' && !tk.quotedAt(0) {
			neg, raw = true, raw[1:]
		}
		t, reason := parseTerm(raw, tk)
		if reason != "" {
			return nil, &Error{Term: tk.orig, Column: tk.col, Reason: reason}
		}
		if neg {
			f.neg = append(f.neg, t)
		} else {
			f.pos = append(f.pos, t)
		}
	}
	return f, nil
}

// MustParse is Parse for filters known to be valid (tests,
// constants); it panics on an error.
func MustParse(s string) *Filter {
	f, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return f
}

// token is one space-separated piece of the filter, quotes removed.
type token struct {
	text   string
	quoted []bool // per byte of text: came from inside quotes
	orig   string
	col    int
}

func (t token) quotedAt(i int) bool { return i < len(t.quoted) && t.quoted[i] }

// splitTerms splits on unquoted spaces; a double-quoted part may hold
// spaces and \" or \\ escapes.
func splitTerms(s string) ([]token, error) {
	var out []token
	var cur token
	var b strings.Builder
	in, started := false, false
	start := 0
	flush := func(end int) {
		if started {
			cur.text, cur.orig, cur.col = b.String(), s[start:end], start+1
			out = append(out, cur)
		}
		cur, started = token{}, false
		b.Reset()
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !started && !in && (c == ' ' || c == '\t') {
			continue
		}
		if !started {
			started, start = true, i
		}
		switch {
		case in && c == '\\' && i+1 < len(s) && (s[i+1] == '"' || s[i+1] == '\\'):
			i++
			b.WriteByte(s[i])
			cur.quoted = append(cur.quoted, true)
		case c == '"':
			in = !in
		case !in && (c == ' ' || c == '\t'):
			flush(i)
		default:
			b.WriteByte(c)
			cur.quoted = append(cur.quoted, in)
		}
	}
	if in {
		return nil, &Error{Term: s[start:], Column: start + 1, Reason: "unclosed quote"}
	}
	flush(len(s))
	return out, nil
}

// parseTerm reads key, operator and value; the operator is the first
// unquoted operator character, so values may contain any of them.
func parseTerm(raw string, tk token) (term, string) {
	at, o := -1, op(0)
	oplen := 0
	off := len(tk.text) - len(raw)
	for i := 0; i < len(raw) && at < 0; i++ {
		if tk.quotedAt(off + i) {
			continue
		}
		for _, c := range ops {
			if strings.HasPrefix(raw[i:], c.text) {
				at, o, oplen = i, c.op, len(c.text)
				break
			}
		}
	}
	if at < 0 {
		if raw == "" {
			return term{}, "empty term"
		}
		return term{field: fieldWord, key: strings.ToLower(raw), op: opHas}, ""
	}
	key, val := raw[:at], raw[at+oplen:]
	if key == "" {
		return term{}, "no key before the operator (want key=value, key~text, dur>100ms, ...)"
	}
	t := term{field: fieldAttr, key: key, op: o, val: val, lower: strings.ToLower(val)}
	if f, ok := fieldNames[strings.ToLower(key)]; ok {
		t.field = f
	}
	numeric := o == opGt || o == opGe || o == opLt || o == opLe
	switch t.field {
	case fieldDur, fieldRDur:
		if o == opHas || o == opHasNot {
			return term{}, strings.ToLower(key) + " takes >, >=, <, <=, = or !=, not ~"
		}
		d, err := time.ParseDuration(val)
		if err != nil {
			return term{}, fmt.Sprintf("bad duration %q (want e.g. 100ms, 1.5s, 2m)", val)
		}
		t.dur = int64(d)
		return t, ""
	case fieldKind:
		if o == opEq || o == opNe {
			k, ok := kindValues[t.lower]
			if !ok {
				return term{}, fmt.Sprintf("unknown kind %q (want server, client, internal, producer, consumer or unspecified)", val)
			}
			t.kind = k
		}
	case fieldStatus:
		if o == opEq || o == opNe {
			c, ok := statusValues[t.lower]
			if !ok {
				return term{}, fmt.Sprintf("unknown status %q (want error, ok or unset)", val)
			}
			t.stat = c
		}
	case fieldReward:
		if o == opHas || o == opHasNot {
			return term{}, "reward takes =, !=, >, >=, <, <=, not ~"
		}
		n, err := strconv.ParseFloat(val, 64)
		if err != nil || math.IsNaN(n) {
			return term{}, fmt.Sprintf("reward compares numbers: %q is not a number", val)
		}
		t.num = n
		return t, ""
	case fieldTask:
		if numeric {
			n, err := strconv.ParseFloat(val, 64)
			if err != nil {
				return term{}, fmt.Sprintf("task compares task indices: %q is not a number", val)
			}
			t.num = n
			return t, ""
		}
	case fieldVerdict:
		if (o == opEq || o == opNe) && !verdictValues[t.lower] {
			return term{}, fmt.Sprintf("unknown verdict %q (want healthy, unhealthy, unobserved or none)", val)
		}
	case fieldAttr:
		if numeric {
			n, err := strconv.ParseFloat(val, 64)
			if err != nil {
				return term{}, fmt.Sprintf("%s compares numbers: %q is not a number", o.text(), val)
			}
			t.num = n
			return t, ""
		}
	}
	if numeric && t.field != fieldAttr {
		return term{}, fmt.Sprintf("%s compares numbers or durations, not %s (want =, !=, ~ or !~)", o.text(), key)
	}
	return t, ""
}

func (o op) text() string {
	for _, c := range ops {
		if c.op == o {
			return c.text
		}
	}
	return "?"
}

// String returns the filter as given, trimmed.
func (f *Filter) String() string {
	if f == nil {
		return ""
	}
	return f.text
}

// WithEvidence returns the filter reading rollouts' outcomes through
// lookup (a joined evidence set's), for the terms reward, verdict, failure
// and task; f itself is unchanged.
func (f *Filter) WithEvidence(lookup func(id string) *evidence.Outcome) *Filter {
	if f == nil {
		f = &Filter{}
	}
	g := *f
	g.outcome = lookup
	return &g
}

// UsesEvidence reports whether a term reads Gym's outcome files, so a
// caller without them can say so rather than match nothing.
func (f *Filter) UsesEvidence() bool {
	if f == nil {
		return false
	}
	for _, ts := range [][]term{f.pos, f.neg} {
		for i := range ts {
			if ts[i].field.evidence() {
				return true
			}
		}
	}
	return false
}

// Empty reports whether the filter matches everything.
func (f *Filter) Empty() bool { return f == nil || len(f.pos)+len(f.neg) == 0 }

// Match reports whether rollout r of snap satisfies the filter.
func (f *Filter) Match(snap *model.Snapshot, r *model.Rollout) bool {
	if f.Empty() {
		return true
	}
	var spanTerms []term
	for i := range f.pos {
		t := &f.pos[i]
		if t.field.rolloutLevel() {
			if !t.matchRollout(f, snap, r) {
				return false
			}
		} else {
			spanTerms = append(spanTerms, *t)
		}
	}
	for i := range f.neg {
		t := &f.neg[i]
		if t.field.rolloutLevel() {
			if t.matchRollout(f, snap, r) {
				return false
			}
		} else if anySpan(r, func(trace model.TraceID, sp *model.Span) bool { return t.matchSpan(snap, trace, sp) }) {
			return false
		}
	}
	if len(spanTerms) == 0 {
		return true
	}
	return anySpan(r, func(trace model.TraceID, sp *model.Span) bool {
		for i := range spanTerms {
			if !spanTerms[i].matchSpan(snap, trace, sp) {
				return false
			}
		}
		return true
	})
}

// MatchSpan reports whether sp, a span of trace, satisfies every span term
// of the filter (rollout terms and '-' terms are not judged on single spans).
func (f *Filter) MatchSpan(snap *model.Snapshot, trace model.TraceID, sp *model.Span) bool {
	if f == nil {
		return true
	}
	for i := range f.pos {
		if t := &f.pos[i]; !t.field.rolloutLevel() && !t.matchSpan(snap, trace, sp) {
			return false
		}
	}
	return true
}

// HitSpan reports whether sp, a span of trace, on its own satisfies every
// term, as a search inside one rollout's waterfall reads the filter: span
// terms hold on sp, '-' terms do not, and words (and id terms) are judged
// by word, the caller's own text search of a span (name, ids, attributes).
// The word "error" also holds on a span with error status.
func (f *Filter) HitSpan(snap *model.Snapshot, trace model.TraceID, sp *model.Span, word func(text string) bool) bool {
	if f.Empty() {
		return true
	}
	hit := func(t *term) bool {
		switch t.field {
		case fieldWord:
			return word(t.key) || t.key == "error" && sp.Status == model.StatusError
		case fieldID:
			return word(t.lower)
		}
		return t.matchSpan(snap, trace, sp)
	}
	for i := range f.pos {
		if !hit(&f.pos[i]) {
			return false
		}
	}
	for i := range f.neg {
		if hit(&f.neg[i]) {
			return false
		}
	}
	return true
}

// Rollouts returns the rollouts of snap that match, in snapshot order.
func (f *Filter) Rollouts(snap *model.Snapshot) []*model.Rollout {
	if f.Empty() {
		return snap.Rollouts
	}
	var out []*model.Rollout
	for _, r := range snap.Rollouts {
		if f.Match(snap, r) {
			out = append(out, r)
		}
	}
	return out
}

func anySpan(r *model.Rollout, fn func(model.TraceID, *model.Span) bool) bool {
	for _, fr := range r.Fragments {
		for i := range fr.Spans {
			if fn(fr.Trace(i), &fr.Spans[i]) {
				return true
			}
		}
	}
	return false
}

func (t *term) matchRollout(f *Filter, snap *model.Snapshot, r *model.Rollout) bool {
	if t.field == fieldID {
		return t.matchText(r.ID)
	}
	if t.field == fieldRDur {
		return compare(float64(r.End-r.Start), float64(t.dur), t.op)
	}
	if t.field.evidence() {
		if f.outcome == nil {
			return false
		}
		return t.matchOutcome(f.outcome(r.ID))
	}
	// A bare word: what the rollout list has always searched.
	if strings.Contains(strings.ToLower(r.ID), t.key) || t.key == "error" && r.Errors > 0 {
		return true
	}
	// Six or more hex digits may be part of a trace or span id, as pasted
	// from a log or another trace viewer.
	id := len(t.key) >= 6 && strings.Trim(t.key, "0123456789abcdef") == ""
	return anySpan(r, func(trace model.TraceID, sp *model.Span) bool {
		return strings.Contains(strings.ToLower(snap.Str(sp.Name)), t.key) ||
			strings.Contains(strings.ToLower(snap.ServiceName(sp.Resource)), t.key) ||
			id && (strings.Contains(trace.String(), t.key) || strings.Contains(sp.SpanID.String(), t.key))
	})
}

// matchOutcome judges an evidence term on what the files say of a
// rollout; a rollout they say nothing of matches no term (and so every
// '-' term).
func (t *term) matchOutcome(o *evidence.Outcome) bool {
	if o == nil {
		return t.field == fieldVerdict && t.op == opEq && t.lower == "none"
	}
	switch t.field {
	case fieldReward:
		return o.HasReward() && compare(o.Reward, t.num, t.op)
	case fieldVerdict:
		v := o.Verdict.String()
		if v == "" {
			v = "none"
		}
		return t.matchText(v)
	case fieldFailure:
		return o.Failure != "" && t.matchText(o.Failure) || o.Failure == "" && t.op == opNe
	case fieldTask:
		if o.Task < 0 {
			return false
		}
		if t.op >= opGt {
			return compare(float64(o.Task), t.num, t.op)
		}
		return t.matchText(o.TaskKey())
	}
	return false
}

// matchText applies =, !=, ~ or !~ to s, ignoring case.
func (t *term) matchText(s string) bool {
	switch t.op {
	case opEq:
		return strings.EqualFold(s, t.val)
	case opNe:
		return !strings.EqualFold(s, t.val)
	case opHas:
		return strings.Contains(strings.ToLower(s), t.lower)
	case opHasNot:
		return !strings.Contains(strings.ToLower(s), t.lower)
	}
	return false
}

func (t *term) matchSpan(snap *model.Snapshot, trace model.TraceID, sp *model.Span) bool {
	switch t.field {
	case fieldName:
		// A span answers to its shown name and to its raw one.
		shown, raw := t.matchText(rollouts.DisplayName(snap.Interner(), sp)), t.matchText(snap.Str(sp.Name))
		if t.op == opNe || t.op == opHasNot {
			return shown && raw
		}
		return shown || raw
	case fieldService:
		svc := snap.ServiceName(sp.Resource)
		// nemo-gym/policy_model answers to service=policy_model too.
		if short := shortService(svc); short != svc && (t.op == opEq || t.op == opNe) {
			eq := strings.EqualFold(svc, t.val) || strings.EqualFold(short, t.val)
			return eq == (t.op == opEq)
		}
		return t.matchText(svc)
	case fieldKind:
		if t.op == opEq || t.op == opNe {
			return (sp.Kind == t.kind) == (t.op == opEq)
		}
		return t.matchText(sp.Kind.String())
	case fieldStatus:
		if t.op == opEq || t.op == opNe {
			return (sp.Status == t.stat) == (t.op == opEq)
		}
		return t.matchText(sp.Status.String())
	case fieldTrace:
		return t.matchText(trace.String())
	case fieldSpan:
		return t.matchText(sp.SpanID.String())
	case fieldDur:
		return compare(float64(sp.Duration()), float64(t.dur), t.op)
	}
	v, ok := sp.Attrs.Get(snap.Interner(), t.key)
	if !ok {
		v, ok = snap.Resource(sp.Resource).Attrs.Get(snap.Interner(), t.key)
	}
	if !ok {
		// A span without the attribute differs from any value.
		return t.op == opNe || t.op == opHasNot
	}
	switch t.op {
	case opGt, opGe, opLt, opLe:
		var n float64
		switch v.Kind {
		case model.ValInt:
			n = float64(v.Int)
		case model.ValDouble:
			n = v.Float
		default:
			var err error
			if n, err = strconv.ParseFloat(v.String(), 64); err != nil {
				return false
			}
		}
		return compare(n, t.num, t.op)
	}
	return t.matchText(v.String())
}

func compare(a, b float64, o op) bool {
	switch o {
	case opEq:
		return a == b
	case opNe:
		return a != b
	case opGt:
		return a > b
	case opGe:
		return a >= b
	case opLt:
		return a < b
	case opLe:
		return a <= b
	}
	return false
}

// shortService drops Gym's "nemo-gym/" prefix from a service.name.
func shortService(name string) string { return strings.TrimPrefix(name, "nemo-gym/") }
