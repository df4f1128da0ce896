package cohort

import (
	"slices"

	"github.com/nemo-gym/gymtrace/gate/rollouts"
	"github.com/nemo-gym/gymtrace/gate/whatif"
	"github.com/nemo-gym/gymtrace/model"
)

// Profiles keeps each rollout's features, summed over its spans, by
// rollout id and version: comparing another cohort of the same capture,
// or of a live store a few rollouts later, reads the rollouts that did
// not change from it instead of their spans. One engine's (its registry
// names the groups); not safe for concurrent use. The zero value is not
// ready: use NewProfiles.
type Profiles struct {
	eng   *whatif.Engine
	in    *model.Interner
	rolls map[string]*profile
	// ids numbers the features the profiles hold, feats names them: a
	// comparison sums rollouts by number.
	ids   map[Feature]int32
	feats []Feature
	// names numbers the attribute keys profiles hold, name spells
	// them: a profile keeps numbers, not strings or maps.
	names map[string]int32
	name  []string
	// keyVals counts, per attribute key, the rollouts holding each of
	// its values (by the key=value feature), keyOver those where it has
	// too many: kept as profiles
	// come and go, they say which keys to compare (comparable) without
	// a pass over every rollout.
	keyVals map[int32]map[int32]int
	keyOver map[int32]int
	cmp     map[string]bool // nil: to be made again
	cmpKey  []bool          // cmp by key number
}

// nameID numbers the attribute key s.
func (p *Profiles) nameID(s string) int32 { return number(p.names, &p.name, s) }

// id numbers f.
func (p *Profiles) id(f Feature) int32 { return number(p.ids, &p.feats, f) }

// number is x's number in ids, given in order of first appearance; list
// spells each number.
func number[K comparable](ids map[K]int32, list *[]K, x K) int32 {
	i, ok := ids[x]
	if !ok {
		i = int32(len(*list))
		ids[x] = i
		*list = append(*list, x)
	}
	return i
}

// NewProfiles returns an empty cache for comparisons on eng.
func NewProfiles(eng *whatif.Engine) *Profiles {
	p := &Profiles{eng: eng}
	p.reset(nil)
	return p
}

// reset forgets every profile, for the interner in.
func (p *Profiles) reset(in *model.Interner) {
	p.in, p.rolls, p.ids, p.feats = in, map[string]*profile{}, map[Feature]int32{}, nil
	p.names, p.name = map[string]int32{}, nil
	p.keyVals, p.keyOver, p.cmp, p.cmpKey = map[int32]map[int32]int{}, map[int32]int{}, nil, nil
}

// profile is one rollout's features: the span names, services and
// groups of its spans, and every attribute value no longer than
// maxValueLen of a key with at most MaxValues of them in the rollout
// (any other key has too many values in the capture to compare), each
// with its figures (its values, which the Profiles' counts merge over
// the capture); and the keys with too many values in the rollout. A
// rollout has a profile as long as the store holds it, so it keeps
// numbers only, 24 bytes a feature.
type profile struct {
	version uint64
	seen    bool // in the comparison being made
	feats   []featSum
	attrs   []attrSum
	over    []int32 // Profiles.names
}

// featSum is a feature's figures in one rollout.
type featSum struct {
	self          int64
	f             int32 // Profiles.feats
	count, errors int32
}

// attrSum is an attribute value's, with its key (Profiles.names).
type attrSum struct {
	self          int64
	f             int32 // Profiles.feats
	count, errors int32
	key           int32
}

// keyValues are an attribute key's distinct values in a rollout, or
// tooMany when they are more than MaxValues or one is too long.
type keyValues struct {
	vals    map[string]bool
	tooMany bool
}

// of returns the profiles of rolls, made for those new or changed, and
// forgets the rollouts snap no longer holds.
func (p *Profiles) of(snap *model.Snapshot, rolls []*model.Rollout) []*profile {
	if p.in != snap.Interner() {
		p.reset(snap.Interner())
	}
	out := make([]*profile, len(rolls))
	for i, r := range rolls {
		pr := p.rolls[r.ID]
		if pr == nil || pr.version != r.Version {
			if pr != nil {
				p.count(pr, -1)
			}
			pr = p.profile(snap, r)
			p.rolls[r.ID] = pr
			p.count(pr, +1)
		}
		pr.seen = true
		out[i] = pr
	}
	for id, pr := range p.rolls {
		if !pr.seen {
			p.count(pr, -1)
			delete(p.rolls, id)
		}
		pr.seen = false
	}
	return out
}

// count adds pr's attribute keys and values to the capture's counts (by
// -1: takes them out).
func (p *Profiles) count(pr *profile, by int) {
	p.cmp, p.cmpKey = nil, nil
	for _, k := range pr.over {
		if p.keyOver[k] += by; p.keyOver[k] == 0 {
			delete(p.keyOver, k)
		}
	}
	for _, a := range pr.attrs {
		k, v := a.key, a.f
		vs := p.keyVals[k]
		if vs == nil {
			vs = map[int32]int{}
			p.keyVals[k] = vs
		}
		if vs[v] += by; vs[v] == 0 {
			delete(vs, v)
			if len(vs) == 0 {
				delete(p.keyVals, k)
			}
		}
	}
}

// comparable is, per attribute key of the profiles of, whether the
// capture's rollouts give it few enough distinct short values to compare
// value by value: more than one, at most MaxValues, and not an endpoint.
func (p *Profiles) comparable() map[string]bool {
	if p.cmp != nil {
		return p.cmp
	}
	ok := map[string]bool{}
	p.cmpKey = make([]bool, len(p.name))
	for k := range p.keyOver {
		ok[p.name[k]] = false
	}
	for k, vs := range p.keyVals {
		if p.keyOver[k] == 0 {
			c := len(vs) > 1 && len(vs) <= MaxValues && !endpointKey(p.name[k])
			ok[p.name[k]], p.cmpKey[k] = c, c
		}
	}
	p.cmp = ok
	return ok
}

// profile sums r's spans into its features, as measure once added them
// span by span.
func (p *Profiles) profile(snap *model.Snapshot, r *model.Rollout) *profile {
	in, reg := snap.Interner(), p.eng.Registry()
	pr := &profile{version: r.Version}
	keys := map[string]*keyValues{}
	at := map[Feature]int{}
	attrAt := map[string]int{}
	add := func(f Feature, sp *model.Span, self int64) {
		i, ok := at[f]
		if !ok {
			i = len(pr.feats)
			at[f] = i
			pr.feats = append(pr.feats, featSum{f: p.id(f)})
		}
		pr.feats[i].add(sp, self)
	}
	gs := p.eng.SpanGroups(snap, r)
	var self []int64
	var kvs []attrKV
	for fi, f := range r.Fragments {
		self = whatif.SelfTimes(f, self)
		for i := range f.Spans {
			sp := &f.Spans[i]
			service := snap.ServiceName(sp.Resource)
			add(Feature{Kind: SpanName, Service: service, Name: rollouts.DisplayName(in, sp)}, sp, self[i])
			add(Feature{Kind: Service, Name: service}, sp, self[i])
			if fi < len(gs) && i < len(gs[fi]) {
				add(Feature{Kind: Group, Name: reg.Name(gs[fi][i])}, sp, self[i])
			}
			kvs = spanValues(keys, in, sp, kvs[:0])
			for _, kv := range kvs {
				j, ok := attrAt[kv.pair]
				if !ok {
					j = len(pr.attrs)
					attrAt[kv.pair] = j
					pr.attrs = append(pr.attrs, attrSum{f: p.id(Feature{Kind: Attr, Name: kv.pair}), key: p.nameID(kv.key)})
				}
				a := &pr.attrs[j]
				a.count, a.self = a.count+1, a.self+self[i]
				if sp.Status == model.StatusError {
					a.errors++
				}
			}
		}
	}
	// A key with too many values here has too many in the capture.
	kept := pr.attrs[:0]
	for _, a := range pr.attrs {
		if !keys[p.name[a.key]].tooMany {
			kept = append(kept, a)
		}
	}
	pr.attrs = slices.Clip(kept)
	pr.feats = slices.Clip(pr.feats)
	for k, kv := range keys {
		if kv.tooMany {
			pr.over = append(pr.over, p.nameID(k))
		}
	}
	return pr
}

func (s *featSum) add(sp *model.Span, self int64) {
	s.count++
	s.self += self
	if sp.Status == model.StatusError {
		s.errors++
	}
}

// attrKV is an attribute value as a feature names it, key=value, and
// its key.
type attrKV struct{ key, pair string }

// spanValues notes sp's attribute values (its events' too) in keys
// and appends them to out as key=value, each once, but those of keys
// with too many values in the rollout.
func spanValues(keys map[string]*keyValues, in *model.Interner, sp *model.Span, out []attrKV) []attrKV {
	note := func(a model.Attrs) {
		a.Each(in, func(k string, v model.Value) bool {
			kv := keys[k]
			if kv == nil {
				kv = &keyValues{vals: map[string]bool{}}
				keys[k] = kv
			}
			if kv.tooMany {
				return true
			}
			s := v.String()
			kv.vals[s] = true
			if len(s) > maxValueLen || len(kv.vals) > MaxValues {
				kv.tooMany, kv.vals = true, nil
				return true
			}
			pair := k + "=" + s
			for _, x := range out {
				if x.pair == pair {
					return true
				}
			}
			out = append(out, attrKV{k, pair})
			return true
		})
	}
	note(sp.Attrs)
	if sp.Extra != nil {
		for _, ev := range sp.Extra.Events {
			note(ev.Attrs)
		}
	}
	return out
}
