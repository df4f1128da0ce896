package rollouts

import (
	"slices"
	"strconv"
	"strings"

	"github.com/nemo-gym/gymtrace/model"
)

// Gym's own spans carry no token counts, but the model backend behind its
// model server may: an OpenAI-style gateway's `chat <model>` CLIENT span
// (OpenTelemetry GenAI conventions) and vLLM's `llm_request` SERVER span
// (the conventions' older names). Each list is in order of preference.
var (
	inputTokenKeys  = [...]string{"gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens", "llm.usage.prompt_tokens"}
	outputTokenKeys = [...]string{"gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens", "llm.usage.completion_tokens"}
	modelKeys       = [...]string{"gen_ai.response.model", "gen_ai.request.model"}
)

// Tokens is the model usage a rollout's spans report: input (prompt) and
// output (completion) tokens summed over the model calls that report them,
// and the models that served them.
type Tokens struct {
	Input, Output int64
	// Calls counts the spans summed: one per model call.
	Calls  int
	Models []string // sorted, distinct
}

// Present reports whether any span reported usage.
func (t Tokens) Present() bool { return t.Calls > 0 }

// Add adds u's counts and models to t.
func (t *Tokens) Add(u Tokens) {
	t.Input += u.Input
	t.Output += u.Output
	t.Calls += u.Calls
	for _, m := range u.Models {
		if i, found := slices.BinarySearch(t.Models, m); !found {
			t.Models = slices.Insert(t.Models, i, m)
		}
	}
}

// TokenKeys reads token usage by interned key id. Real Gym captures carry
// none of the keys, so a summary costs one lookup per key and no span walk.
type TokenKeys struct {
	in     *model.Interner
	n      int
	input  [len(inputTokenKeys)]model.Str
	output [len(outputTokenKeys)]model.Str
	models [len(modelKeys)]model.Str
	any    bool // some usage key is interned
}

// Resolve looks the keys up in in, again once the interner grew.
func (k *TokenKeys) Resolve(in *model.Interner) {
	if k.in == in && k.n == in.Len() {
		return
	}
	k.in, k.n, k.any = in, in.Len(), false
	for i, s := range inputTokenKeys {
		k.input[i] = lookupKey(in, s)
		k.any = k.any || k.input[i] != noKey
	}
	for i, s := range outputTokenKeys {
		k.output[i] = lookupKey(in, s)
		k.any = k.any || k.output[i] != noKey
	}
	for i, s := range modelKeys {
		k.models[i] = lookupKey(in, s)
	}
}

// usage is what one span reports; rank is the preference of the key each
// value came from (lower wins), len(keys) when absent.
type usage struct {
	in, out         int64
	inRank, outRank int
	model           string
	modelRank       int
}

func (u *usage) carries() bool {
	return u.inRank < len(inputTokenKeys) || u.outRank < len(outputTokenKeys)
}

// spanUsage reads sp's usage in one walk of its attributes.
func (k *TokenKeys) spanUsage(sp *model.Span) usage {
	u := usage{inRank: len(inputTokenKeys), outRank: len(outputTokenKeys), modelRank: len(modelKeys)}
	it := sp.Attrs.Iter()
	for it.Next() {
		key := it.Key()
		if r := slices.Index(k.input[:], key); r >= 0 && r < u.inRank {
			if v, ok := count(it.Value(k.in)); ok {
				u.in, u.inRank = v, r
			}
		} else if r := slices.Index(k.output[:], key); r >= 0 && r < u.outRank {
			if v, ok := count(it.Value(k.in)); ok {
				u.out, u.outRank = v, r
			}
		} else if r := slices.Index(k.models[:], key); r >= 0 && r < u.modelRank {
			if s := it.Value(k.in).String(); s != "" {
				u.model, u.modelRank = strings.Clone(s), r
			}
		}
	}
	return u
}

// count reads a token count: an int, or a whole double or numeric string
// as some exporters send them. Negative counts are no counts.
func count(v model.Value) (int64, bool) {
	switch v.Kind {
	case model.ValInt:
		return v.Int, v.Int >= 0
	case model.ValDouble:
		return int64(v.Float), v.Float >= 0 && v.Float == float64(int64(v.Float))
	case model.ValString:
		n, err := strconv.ParseInt(strings.TrimSpace(v.Str), 10, 64)
		return n, err == nil && n >= 0
	}
	return 0, false
}

// hit is a span that reports usage.
type hit struct {
	frag int
	span int32
	u    usage
	// shadowed: a span below it reports usage too, so it is the same call
	// seen from higher up (a gateway's CLIENT span over vLLM's span).
	shadowed bool
	// above is the nearest hit it shadows, -1 for none.
	above int
}

// Rollout sums the token usage of r's spans. When nested spans both report
// usage (a gateway's `chat` span and the vLLM span under it describe one
// call) only the deepest counts; its model, when it names none, is the one
// of the nearest span above it that reports usage.
func (k *TokenKeys) Rollout(r *model.Rollout) Tokens {
	if !k.any || r == nil {
		return Tokens{}
	}
	var hits []hit
	at := map[[2]int32]int{} // (fragment, span) -> index in hits
	frags := 0
	for fi, f := range r.Fragments {
		before := len(hits)
		for i := range f.Spans {
			if u := k.spanUsage(&f.Spans[i]); u.carries() {
				at[[2]int32{int32(fi), int32(i)}] = len(hits)
				hits = append(hits, hit{frag: fi, span: int32(i), u: u, above: -1})
			}
		}
		if len(hits) > before {
			frags++
		}
	}
	if len(hits) == 0 {
		return Tokens{}
	}
	// Across fragments a parent is found by id; only built when usage
	// spans sit in more than one fragment.
	var byID map[model.SpanID][2]int32
	if frags > 1 {
		byID = map[model.SpanID][2]int32{}
		for fi, f := range r.Fragments {
			for i := range f.Spans {
				byID[f.Spans[i].SpanID] = [2]int32{int32(fi), int32(i)}
			}
		}
	}
	for h := range hits {
		fi, i := int32(hits[h].frag), hits[h].span
		for steps := 0; steps <= r.Spans; steps++ {
			f := r.Fragments[fi]
			if p := f.Spans[i].Parent; p >= 0 && int(p) < len(f.Spans) {
				i = p
			} else if next, ok := byID[f.ParentID(int(i))]; ok {
				fi, i = next[0], next[1]
			} else {
				break
			}
			if a, ok := at[[2]int32{fi, i}]; ok {
				hits[a].shadowed = true
				if hits[h].above < 0 {
					hits[h].above = a
				}
			}
		}
	}
	var t Tokens
	for h := range hits {
		if hits[h].shadowed {
			continue
		}
		u := hits[h].u
		t.Input += u.in
		t.Output += u.out
		t.Calls++
		m := u.model
		for a, n := hits[h].above, 0; m == "" && a >= 0 && n < len(hits); a, n = hits[a].above, n+1 {
			m = hits[a].u.model
		}
		if m != "" {
			if i, found := slices.BinarySearch(t.Models, m); !found {
				t.Models = slices.Insert(t.Models, i, m)
			}
		}
	}
	return t
}

// TokenReport is the token usage of a structure: per rollout (only those
// whose spans report any), their total, and what spans outside every
// rollout report (run-level traffic, unattributed fragments: a backend
// whose caller sent no traceparent starts traces of its own).
type TokenReport struct {
	PerRollout map[string]Tokens
	Total      Tokens
	Outside    Tokens
}

// Tokens sums the token usage of s's rollouts and of what lies outside them.
func (s *Structure) Tokens() TokenReport {
	var k TokenKeys
	k.Resolve(s.Snap.Interner())
	var rep TokenReport
	if !k.any {
		return rep
	}
	for _, r := range s.Rollouts {
		if t := k.Rollout(r); t.Present() {
			if rep.PerRollout == nil {
				rep.PerRollout = map[string]Tokens{}
			}
			rep.PerRollout[r.ID] = t
			rep.Total.Add(t)
		}
	}
	outside := func(f *model.Fragment) {
		rep.Outside.Add(k.Rollout(&model.Rollout{Fragments: []*model.Fragment{f}, Spans: len(f.Spans)}))
	}
	for _, p := range s.Run {
		outside(p.Frag)
	}
	for _, f := range s.Unattributed {
		outside(f)
	}
	return rep
}
