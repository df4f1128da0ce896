package cohort

import (
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
}

// id numbers f.
func (p *Profiles) id(f Feature) int32 {
	i, ok := p.ids[f]
	if !ok {
		i = int32(len(p.feats))
		p.ids[f] = i
		p.feats = append(p.feats, f)
	}
	return i
}

// NewProfiles returns an empty cache for comparisons on eng.
func NewProfiles(eng *whatif.Engine) *Profiles {
	return &Profiles{eng: eng, rolls: map[string]*profile{}, ids: map[Feature]int32{}}
}

// profile is one rollout's features: the span names, services and
// groups of its spans, and every attribute value no longer than
// maxValueLen of a key with at most MaxValues of them in the rollout
// (any other key has too many values in the capture to compare), each
// with its figures; and each attribute key's values, which
// distinctValues merges over the capture.
type profile struct {
	version uint64
	seen    bool // in the comparison being made
	feats   []featSample
	attrs   []attrSample
	keys    map[string]*keyValues
}

type featSample struct {
	f int32 // Profiles.feats
	sample
}

type attrSample struct {
	key string
	featSample
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
		p.in, p.rolls, p.ids, p.feats = snap.Interner(), map[string]*profile{}, map[Feature]int32{}, nil
	}
	out := make([]*profile, len(rolls))
	for i, r := range rolls {
		pr := p.rolls[r.ID]
		if pr == nil || pr.version != r.Version {
			pr = p.profile(snap, r)
			p.rolls[r.ID] = pr
		}
		pr.seen = true
		out[i] = pr
	}
	for id, pr := range p.rolls {
		if !pr.seen {
			delete(p.rolls, id)
		}
		pr.seen = false
	}
	return out
}

// profile sums r's spans into its features, as measure once added them
// span by span.
func (p *Profiles) profile(snap *model.Snapshot, r *model.Rollout) *profile {
	in, reg := snap.Interner(), p.eng.Registry()
	pr := &profile{version: r.Version, keys: map[string]*keyValues{}}
	at := map[Feature]int{}
	attrAt := map[string]int{}
	add := func(f Feature, sp *model.Span, self int64) {
		i, ok := at[f]
		if !ok {
			i = len(pr.feats)
			at[f] = i
			pr.feats = append(pr.feats, featSample{f: p.id(f)})
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
			kvs = pr.spanValues(in, sp, kvs[:0])
			for _, kv := range kvs {
				j, ok := attrAt[kv.pair]
				if !ok {
					j = len(pr.attrs)
					attrAt[kv.pair] = j
					pr.attrs = append(pr.attrs, attrSample{key: kv.key, featSample: featSample{f: p.id(Feature{Kind: Attr, Name: kv.pair})}})
				}
				pr.attrs[j].add(sp, self[i])
			}
		}
	}
	// A key with too many values here has too many in the capture.
	kept := pr.attrs[:0]
	for _, a := range pr.attrs {
		if !pr.keys[a.key].tooMany {
			kept = append(kept, a)
		}
	}
	pr.attrs = kept
	return pr
}

func (s *sample) add(sp *model.Span, self int64) {
	s.count++
	s.self += self
	if sp.Status == model.StatusError {
		s.errors++
	}
}

// attrKV is an attribute value as a feature names it, key=value, and
// its key.
type attrKV struct{ key, pair string }

// spanValues notes sp's attribute values (its events' too) in pr.keys
// and appends them to out as key=value, each once, but those of keys
// with too many values in the rollout.
func (pr *profile) spanValues(in *model.Interner, sp *model.Span, out []attrKV) []attrKV {
	note := func(a model.Attrs) {
		a.Each(in, func(k string, v model.Value) bool {
			kv := pr.keys[k]
			if kv == nil {
				kv = &keyValues{vals: map[string]bool{}}
				pr.keys[k] = kv
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

// distinctOf is distinctValues over the profiles of every rollout.
func distinctOf(prs []*profile) map[string]bool {
	seen := map[string]map[string]bool{}
	tooMany := map[string]bool{}
	for _, pr := range prs {
		for k, kv := range pr.keys {
			if tooMany[k] {
				continue
			}
			if kv.tooMany {
				tooMany[k], seen[k] = true, nil
				continue
			}
			vs := seen[k]
			if vs == nil {
				vs = map[string]bool{}
				seen[k] = vs
			}
			for v := range kv.vals {
				vs[v] = true
			}
			if len(vs) > MaxValues {
				tooMany[k], seen[k] = true, nil
			}
		}
	}
	ok := map[string]bool{}
	for k := range tooMany {
		ok[k] = false
	}
	for k, vs := range seen {
		if !tooMany[k] {
			ok[k] = len(vs) > 1 && !endpointKey(k)
		}
	}
	return ok
}
