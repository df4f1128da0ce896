package rollouts

import (
	"math"
	"strings"

	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/model"
)

// noKey stands for a key the interner does not hold: no span carries it, and
// no attribute's id equals it.
const noKey = model.Str(math.MaxUint32)

// Keys are the interned ids of the attribute keys the structure and the
// check read. A million spans are read by id: comparing key texts and
// decoding values of keys nobody asked for was most of their cost.
type Keys struct {
	in *model.Interner
	n  int // the interner's length when resolved

	urlFull, httpURL      model.Str
	respStatus, oldStatus model.Str
	target, urlPath       model.Str
	host, serverAddr      model.Str
	rolloutID             model.Str

	// names caches what the structure asks of a span name, by id: a
	// capture has few distinct names and a million spans.
	names nameCache
}

// Facts of a span name (nameCache).
const (
	nameKnown   uint8 = 1 << iota // the entry is filled
	nameRoute                     // isRouteName
	nameGym                       // starts with "gym."
	nameRollout                   // is "gym.rollout"
)

// nameCache is direct-mapped: a slot holds the facts of the last name id
// that hashed to it.
type nameCache struct {
	ids   [1024]model.Str
	facts [1024]uint8
}

// name returns the facts of the span name id.
func (k *Keys) name(id model.Str) uint8 {
	slot := uint32(id) * 0x9e3779b1 >> 22
	if f := k.names.facts[slot]; f != 0 && k.names.ids[slot] == id {
		return f
	}
	s := k.in.Str(id)
	f := nameKnown
	if groups.IsRouteName(s) {
		f |= nameRoute
	}
	if strings.HasPrefix(s, "gym.") {
		f |= nameGym
	}
	if s == "gym.rollout" {
		f |= nameRollout
	}
	k.names.ids[slot], k.names.facts[slot] = id, f
	return f
}

func lookupKey(in *model.Interner, s string) model.Str {
	if id, ok := in.Lookup(s); ok {
		return id
	}
	return noKey
}

// Resolve looks the keys up in in. Every key of a stored span was interned
// before the span was stored, so ids resolved after a snapshot was taken
// hold for all of its spans; they are looked up again once the interner grew.
func (k *Keys) Resolve(in *model.Interner) {
	if k.in == in && k.n == in.Len() {
		return
	}
	if k.in != in {
		k.names = nameCache{}
	}
	k.in, k.n = in, in.Len()
	k.urlFull, k.httpURL = lookupKey(in, urlKeys[0]), lookupKey(in, urlKeys[1])
	k.respStatus, k.oldStatus = lookupKey(in, statusKeys[0]), lookupKey(in, statusKeys[1])
	k.target, k.urlPath = lookupKey(in, targetKeys[0]), lookupKey(in, targetKeys[1])
	k.host, k.serverAddr = lookupKey(in, hostKeys[0]), lookupKey(in, hostKeys[1])
	k.rolloutID = lookupKey(in, rolloutIDAttr)
}

// first is firstAttr by id for a key and its older spelling: the last value
// of k0 when there is one, else the first of k1.
func (k *Keys) first(a model.Attrs, k0, k1 model.Str) (string, bool) {
	out, found := "", false
	it := a.Iter()
	for it.Next() {
		switch it.Key() {
		case k0:
			out, found = it.Value(k.in).String(), true
		case k1:
			if !found {
				out, found = it.Value(k.in).String(), true
			}
		}
	}
	return out, found
}

// has reports whether a holds k0 or k1, decoding nothing.
func (k *Keys) has(a model.Attrs, k0, k1 model.Str) bool {
	it := a.Iter()
	for it.Next() {
		if key := it.Key(); key == k0 || key == k1 {
			return true
		}
	}
	return false
}

func (k *Keys) url(a model.Attrs) (string, bool) { return k.first(a, k.urlFull, k.httpURL) }

// hostOf is hostOf by id, in one walk of the attributes.
func (k *Keys) hostOf(sp *model.Span) string {
	host, url := "", ""
	seenHost, seenURL := false, false
	it := sp.Attrs.Iter()
	for it.Next() {
		switch it.Key() {
		case k.host:
			if !seenHost {
				host, seenHost = it.Value(k.in).String(), true
			}
		case k.httpURL:
			if !seenURL {
				url, seenURL = it.Value(k.in).String(), true
			}
		}
	}
	if host != "" {
		return host
	}
	if seenURL {
		if h, _ := SplitURL(url); h != "" {
			return h
		}
	}
	return ""
}

// isRequestSpan is isRequestSpan by id.
func (k *Keys) isRequestSpan(sp *model.Span) bool {
	switch sp.Kind {
	case model.KindServer:
		return true
	case model.KindInternal:
		return k.name(sp.Name)&nameRoute != 0 && sp.Attrs.HasKey(k.target)
	}
	return false
}

// isLeaked is isLeaked by id.
func (k *Keys) isLeaked(sp, parent *model.Span) bool {
	if sp.Kind != model.KindInternal || !k.isRequestSpan(sp) {
		return false
	}
	return parent == nil || parent.Kind != model.KindClient
}

// callerCut reports whether sp, a child of parent, is where a rollout starts
// under spans of a client that is not Gym's driver: a call to /run (or the
// /run request itself) right under an INTERNAL span that is no Gym span and
// not inside a server. NeMo-RL calls every rollout of a step that way, under
// one rl.gym.run_rollouts span; Gym's driver calls from gym.job, which the
// store already keeps apart.
func (k *Keys) callerCut(sp, parent *model.Span, parentServed bool) bool {
	if parentServed || parent.Kind != model.KindInternal || k.name(parent.Name)&nameGym != 0 {
		return false
	}
	switch sp.Kind {
	case model.KindClient, model.KindServer:
		_, path := k.spanRoute(sp)
		return path == "/run"
	}
	return false
}

// spanRoute is spanRoute by id.
func (k *Keys) spanRoute(sp *model.Span) (method, path string) {
	name := k.in.Str(sp.Name)
	switch sp.Kind {
	case model.KindClient:
		u, ok := k.url(sp.Attrs)
		if !ok {
			return "", ""
		}
		_, p := SplitURL(u)
		return strings.TrimPrefix(name, "HTTP "), stripRolloutPrefix(p)
	case model.KindServer, model.KindInternal:
		if !groups.IsRouteName(name) {
			return "", ""
		}
		if m, rest, ok := strings.Cut(name, " "); ok {
			return m, stripRolloutPrefix(rest)
		}
		if t, ok := sp.Attrs.GetKey(k.in, k.target); ok {
			return name, stripRolloutPrefix(cutQuery(t.String()))
		}
		return name, ""
	}
	return "", ""
}

// rolloutIDOf is rolloutIDOf by id: nemo.gym.rollout.id, else the first
// /ng-rollout/{id}/ path among the URL and path attributes.
func (k *Keys) rolloutIDOf(sp *model.Span) string {
	id := ""
	it := sp.Attrs.Iter()
	for it.Next() {
		switch it.Key() {
		case k.rolloutID:
			if s := it.Value(k.in).String(); s != "" {
				return strings.Clone(s)
			}
		case k.target, k.urlFull, k.httpURL, k.urlPath:
			if id == "" {
				id = rolloutIDInPath(it.Value(k.in).String())
			}
		}
	}
	return strings.Clone(id)
}

// Interner returns the interner the keys were resolved in.
func (k *Keys) Interner() *model.Interner { return k.in }

// URL returns the span's URL (url.full, else http.url).
func (k *Keys) URL(a model.Attrs) (string, bool) { return k.url(a) }

// HostAttr returns the host a span names (http.host, else server.address).
func (k *Keys) HostAttr(a model.Attrs) (string, bool) { return k.first(a, k.host, k.serverAddr) }

// TargetAttr returns the path a span names (http.target, else url.path).
func (k *Keys) TargetAttr(a model.Attrs) (string, bool) { return k.first(a, k.target, k.urlPath) }

// HasStatus reports whether a span carries an HTTP response status code.
func (k *Keys) HasStatus(a model.Attrs) bool { return k.has(a, k.respStatus, k.oldStatus) }

// SpanRoute returns the HTTP method and path a request or CLIENT span
// names, any /ng-rollout/{id} prefix stripped; "" when sp names none.
func (k *Keys) SpanRoute(sp *model.Span) (method, path string) { return k.spanRoute(sp) }
