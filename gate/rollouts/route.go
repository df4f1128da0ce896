package rollouts

import (
	"strings"

	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/model"
)

// Attribute keys of Gym's HTTP spans, old and new semantic conventions
// (FastAPI's SERVER spans use the old ones, Gym's CLIENT spans the new).
const (
	attrTarget     = "http.target"
	attrHost       = "http.host"
	attrHostPort   = "net.host.port"
	attrASGIEvent  = "asgi.event.type"
	ngRolloutPath  = "/ng-rollout/"
	rolloutIDAttr  = model.RolloutIDKey
	asgiReceiveSfx = " http receive"
	asgiSendSfx    = " http send"
)

// stripRolloutPrefix removes a leading /ng-rollout/{id} segment pair from a
// path, whether {id} is a real id or the route template's placeholder.
func stripRolloutPrefix(p string) string {
	if !strings.HasPrefix(p, ngRolloutPath) {
		return p
	}
	rest := p[len(ngRolloutPath):]
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		return rest[i:]
	}
	return "/"
}

// rolloutIDInPath returns the {id} of a /ng-rollout/{id}/ path, "" when the
// path has none or holds the route template's placeholder.
func rolloutIDInPath(p string) string {
	i := strings.Index(p, ngRolloutPath)
	if i < 0 {
		return ""
	}
	rest := p[i+len(ngRolloutPath):]
	if j := strings.IndexAny(rest, "/?#"); j >= 0 {
		rest = rest[:j]
	}
	if rest == "" || strings.ContainsAny(rest, "{}") {
		return ""
	}
	return rest
}

func cutQuery(p string) string {
	if i := strings.IndexAny(p, "?#"); i >= 0 {
		return p[:i]
	}
	return p
}

// spanRoute returns the HTTP method and path a request span (SERVER, or a
// request span made INTERNAL by a context carry-over) or a CLIENT span names,
// with any /ng-rollout/{id} prefix stripped; "" when sp names none.
func spanRoute(in *model.Interner, sp *model.Span) (method, path string) {
	name := in.Str(sp.Name)
	switch sp.Kind {
	case model.KindClient:
		u, ok := firstAttr(in, sp.Attrs, urlKeys)
		if !ok {
			return "", ""
		}
		_, p := SplitURL(u)
		method = strings.TrimPrefix(name, "HTTP ")
		return method, stripRolloutPrefix(p)
	case model.KindServer, model.KindInternal:
		if !groups.IsRouteName(name) {
			return "", ""
		}
		if m, rest, ok := strings.Cut(name, " "); ok {
			return m, stripRolloutPrefix(rest)
		}
		if t, ok := sp.Attrs.Get(in, attrTarget); ok {
			return name, stripRolloutPrefix(cutQuery(t.String()))
		}
		return name, ""
	}
	return "", ""
}

// DisplayName is the name to show and compare a span by. A request span FastAPI
// could not name by its route (observability on: Gym strips the
// /ng-rollout/{id} prefix after matching) is named by the path it served, so
// the same handler reads the same with observability on or off.
func DisplayName(in *model.Interner, sp *model.Span) string {
	name := in.Str(sp.Name)
	if sp.Kind == model.KindClient || !groups.IsMethodName(name) {
		return name
	}
	if m, p := spanRoute(in, sp); p != "" {
		return m + " " + p
	}
	return name
}

// livenessPaths are the paths health probes ask for.
var livenessPaths = []string{"/", "/health", "/healthz", "/livez", "/readyz"}

func isLiveness(path string) bool {
	for _, p := range livenessPaths {
		if path == p {
			return true
		}
	}
	return false
}

// attribute keys the structure and the check read, old and new HTTP semantic conventions.
var (
	urlKeys    = []string{"url.full", "http.url"}
	statusKeys = []string{"http.response.status_code", "http.status_code"}
	targetKeys = []string{"http.target", "url.path"}
	hostKeys   = []string{"http.host", "server.address"}
)

func firstAttr(in *model.Interner, a model.Attrs, keys []string) (string, bool) {
	var out string
	found := false
	a.Each(in, func(k string, v model.Value) bool {
		for i, want := range keys {
			if k == want {
				if !found || i == 0 {
					out, found = v.String(), true
				}
			}
		}
		return true
	})
	return out, found
}

// SplitURL returns host:port and path of an absolute URL, without query or
// fragment. It is a cut, not a parser: enough to match a CLIENT span's URL
// with a SERVER span's, cheaply, for every call of a large capture.
func SplitURL(s string) (host, path string) {
	_, rest, ok := strings.Cut(s, "://")
	if !ok {
		return "", ""
	}
	if i := strings.IndexAny(rest, "?#"); i >= 0 {
		rest = rest[:i]
	}
	// The path keeps its slash from s: no new string per call.
	host, path = rest, "/"
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		host, path = rest[:i], rest[i:]
	}
	if i := strings.LastIndexByte(host, '@'); i >= 0 {
		host = host[i+1:]
	}
	return host, path
}
