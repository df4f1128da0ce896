package rollouts

import (
	"testing"

	"github.com/nemo-gym/gymtrace/model"
)

func TestDisplayNameAndRoutes(t *testing.T) {
	in := model.NewInterner()
	l := model.NewLocal(in)
	span := func(name string, kind model.Kind, attrs ...string) *model.Span {
		var b model.AttrBuilder
		for i := 0; i+1 < len(attrs); i += 2 {
			b.String(l, in.Intern(attrs[i]), []byte(attrs[i+1]))
		}
		return &model.Span{Name: in.Intern(name), Kind: kind, Attrs: b.Attrs()}
	}
	for _, tc := range []struct {
		sp           *model.Span
		display      string
		method, path string
		request      bool
	}{
		// Observability on: the prefix is stripped after matching, FastAPI names the span "POST".
		{span("POST", model.KindServer, "http.target", "/ng-rollout/3-0/verify?x=1"), "POST /verify", "POST", "/verify", true},
		{span("POST /ng-rollout/{rollout_id}/v1/responses", model.KindServer, "http.target", "/ng-rollout/3-0/v1/responses"), "POST /ng-rollout/{rollout_id}/v1/responses", "POST", "/v1/responses", true},
		{span("POST /run", model.KindServer), "POST /run", "POST", "/run", true},
		{span("HTTP POST", model.KindClient, "url.full", "http://127.0.0.1:9/ng-rollout/3-0/seed_session"), "HTTP POST", "POST", "/seed_session", false},
		// A request span made INTERNAL by a carry-over is still a request span.
		{span("POST /run", model.KindInternal, "http.target", "/run"), "POST /run", "POST", "/run", true},
		// An ASGI child is not.
		{span("POST /run http send", model.KindInternal, "asgi.event.type", "http.response.body"), "POST /run http send", "", "", false},
		{span("gym.verify", model.KindInternal), "gym.verify", "", "", false},
	} {
		name := in.Str(tc.sp.Name)
		var k Keys
		k.Resolve(in)
		if m, p := k.spanRoute(tc.sp); m != tc.method || p != tc.path {
			t.Errorf("%s: route by key id = %q %q, want %q %q", name, m, p, tc.method, tc.path)
		}
		if got := DisplayName(in, tc.sp); got != tc.display {
			t.Errorf("%s: DisplayName = %q, want %q", name, got, tc.display)
		}
		if m, p := spanRoute(in, tc.sp); m != tc.method || p != tc.path {
			t.Errorf("%s: route = %q %q, want %q %q", name, m, p, tc.method, tc.path)
		}
		if got := k.isRequestSpan(tc.sp); got != tc.request {
			t.Errorf("%s: request span = %v, want %v", name, got, tc.request)
		}
	}
	if id := rolloutIDInPath("/ng-rollout/{rollout_id}/v1/responses"); id != "" {
		t.Errorf("a route template's placeholder is no rollout id: got %q", id)
	}
	if id := rolloutIDInPath("http://h:1/ng-rollout/12-3/verify"); id != "12-3" {
		t.Errorf("rollout id from path = %q, want 12-3", id)
	}
}

func TestSplitURL(t *testing.T) {
	for _, tc := range []struct{ in, host, path string }{
		{"http://127.0.0.1:8001/ng-rollout/r-1/v1/responses?x=1#f", "127.0.0.1:8001", "/ng-rollout/r-1/v1/responses"},
		{"http://user:pw@h:9/run", "h:9", "/run"},
		{"http://h:9", "h:9", "/"},
		{"http://h:9?q=1", "h:9", "/"},
		{"https://h/", "h", "/"},
		{"/run", "", ""},
	} {
		if h, p := SplitURL(tc.in); h != tc.host || p != tc.path {
			t.Errorf("SplitURL(%q) = %q %q, want %q %q", tc.in, h, p, tc.host, tc.path)
		}
	}
}
