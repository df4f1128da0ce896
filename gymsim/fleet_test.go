package gymsim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// scenarios are the settings of the real captures (spec, per-process
// specs, observability, aiohttp, standalone, context carry-over) and each
// variant's own cases.
var scenarios = []struct {
	name string
	cfg  Config
}{
	{"all", Config{Spec: "all"}},
	{"default", Config{Spec: "default"}},
	{"blank is default", Config{Spec: " , "}},
	{"per_rollout", Config{Spec: "per_rollout"}},
	{"server+rollout+verify", Config{Spec: "server,rollout,verify"}},
	{"obs all", Config{Spec: "all", Observability: true}},
	{"obs per_rollout", Config{Spec: "per_rollout", Observability: true}},
	{"aiohttp all", Config{Spec: "all", AIOHTTP: true}},
	{"aiohttp server+rollout+verify", Config{Spec: "server,rollout,verify", AIOHTTP: true}},
	{"standalone default", Config{Spec: "default", Standalone: true}},
	{"broken model", Config{Spec: "all", ProcessSpecs: map[string]string{"policy_model": "model_call,rollout"}}},
	{"broken agent client", Config{Spec: "default", ProcessSpecs: map[string]string{"agent": "server,rollout"}}},
	{"leak all", Config{Spec: "all", ContextLeak: 0.15}},
	{"leak per_rollout", Config{Spec: "per_rollout", ContextLeak: 0.15}},
	{"G1 unknown name: telemetry off", Config{Spec: "default,tool_call"}},
	{"G1 unknown name in one process", Config{Spec: "all", ProcessSpecs: map[string]string{"resources": "all,concurrency"}}},
	{"G1c per_rollout", Config{Variant: "G1c", Spec: "per_rollout"}},
	{"G2 unknown name dropped", Config{Variant: "G2", Spec: "default,tool_call,verify"}},
	{"G3 default", Config{Variant: "G3"}},
	{"G3 all obs aiohttp", Config{Variant: "G3", Spec: "all", Observability: true, AIOHTTP: true}},
	{"G3 disconnect races", Config{Variant: "G3", Spec: "all", DisconnectRace: 0.3}},
	{"G1 ignores disconnect races", Config{Spec: "all", DisconnectRace: 1}},
}

func testSeeds() []int64 {
	n := 10
	if testing.Short() || raceOn {
		n = 2
	}
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(41 + i)
	}
	return out
}

const scenarioRollouts = 8

// TestFleetMatchesItsTruth runs every scenario over ten seeds with the
// console exporter and checks the emission against the fleet's own
// bookkeeping and against what Gym does: the exact span count of every
// rollout and of the run-level traffic as the plan and the gates predict,
// the console lines against the truth, rollout membership against the
// parent links, the attribute keys of every span type, rollout ids and
// /ng-rollout/ prefixes only where observability puts them, statuses, ASGI
// children, one CLIENT span per request and the resource.
func TestFleetMatchesItsTruth(t *testing.T) {
	for _, sc := range scenarios {
		for _, seed := range testSeeds() {
			t.Run(fmt.Sprintf("%s/seed=%d", sc.name, seed), func(t *testing.T) {
				cfg := sc.cfg
				cfg.Seed, cfg.Rollouts, cfg.Concurrency = seed, scenarioRollouts, 4
				cfg.Protocol, cfg.RecordTruth = "console", true
				var out bytes.Buffer
				cfg.Console = &out
				f := runFleet(t, cfg)
				truth := f.Truth()
				lines := parseConsole(t, out.Bytes())
				checkConsoleIsTruth(t, lines, truth)
				checkCounts(t, f, truth)
				checkMembership(t, truth)
				checkAttributes(t, f, lines, truth)
				checkRequests(t, f, lines, truth)
			})
		}
	}
}

// consoleSpan is one console line, with the attribute keys in order.
type consoleSpan struct {
	Name    string `json:"name"`
	Context struct {
		TraceID string `json:"trace_id"`
		SpanID  string `json:"span_id"`
	} `json:"context"`
	Kind     string  `json:"kind"`
	ParentID *string `json:"parent_id"`
	Status   struct {
		Code        string `json:"status_code"`
		Description string `json:"description"`
	} `json:"status"`
	Attributes map[string]any `json:"attributes"`
	Events     []struct {
		Name       string         `json:"name"`
		Attributes map[string]any `json:"attributes"`
	} `json:"events"`
	Resource struct {
		Attributes map[string]any `json:"attributes"`
	} `json:"resource"`
	keys, resKeys []string
}

func parseConsole(t *testing.T, b []byte) map[string]*consoleSpan {
	t.Helper()
	out := map[string]*consoleSpan{}
	if len(bytes.TrimSpace(b)) == 0 {
		return out
	}
	for i, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var s consoleSpan
		if err := json.Unmarshal(line, &s); err != nil {
			t.Fatalf("console line %d: %v", i+1, err)
		}
		ko := keyOrder(t, line)
		var raw struct {
			Attributes json.RawMessage `json:"attributes"`
		}
		_ = json.Unmarshal(line, &raw)
		s.keys = keys(t, raw.Attributes)
		s.resKeys = ko["resource.attributes"]
		out[strings.TrimPrefix(s.Context.SpanID, "0x")] = &s
	}
	return out
}

func checkConsoleIsTruth(t *testing.T, lines map[string]*consoleSpan, truth []TruthSpan) {
	t.Helper()
	if len(lines) != len(truth) {
		t.Fatalf("%d console lines, %d spans in the truth", len(lines), len(truth))
	}
	for _, ts := range truth {
		l, ok := lines[ts.SpanID.String()]
		if !ok {
			t.Fatalf("span %s %q not printed", ts.SpanID, ts.Name)
		}
		parent := ""
		if l.ParentID != nil {
			parent = *l.ParentID
		}
		wantParent := ""
		if ts.ParentID.IsValid() {
			wantParent = "0x" + ts.ParentID.String()
		}
		if l.Name != ts.Name || l.Kind != kindNames[ts.Kind] || parent != wantParent || l.Context.TraceID != "0x"+ts.TraceID.String() ||
			l.Status.Code != statusNames[ts.Status] {
			t.Fatalf("printed %s %s parent %s trace %s %s; truth %+v", l.Name, l.Kind, parent, l.Context.TraceID, l.Status.Code, ts)
		}
	}
}

// groupsOf is what each role's process resolved, as the test reads Gym.
func groupsOf(f *Fleet) map[string]*proc {
	return map[string]*proc{RoleDriver: f.driver, RoleAgent: f.agent, RoleModel: f.model, RoleResources: f.resources}
}

// checkCounts compares the spans of every rollout, and of the run-level
// traffic, with the count the plan and each process's gates predict.
func checkCounts(t *testing.T, f *Fleet, truth []TruthSpan) {
	t.Helper()
	ps := groupsOf(f)
	v := f.variant
	on := func(role, g string) int {
		if ps[role].on(g) {
			return 1
		}
		return 0
	}
	// served counts the callee's spans of one request, req the caller's
	// too.
	var served func(callee string, status int, post bool) int
	req := func(caller, callee string, status int, post bool) int {
		n := on(caller, GroupHTTPClient)
		if f.cfg.AIOHTTP && ps[caller].telemetry {
			n++
		}
		return n + served(callee, status, post)
	}
	served = func(callee string, status int, post bool) int {
		n := 0
		if ps[callee].on(GroupServer) {
			n++ // the request span
			if post || v.DisconnectReceive {
				n++ // reading the request
			}
			if v.DisconnectReceive {
				n++ // the disconnect listener
			}
			if status < 500 {
				n += 3
			} else {
				n += 2
			}
		}
		return n
	}
	want := map[int]int{}
	for i := 0; i < f.cfg.Rollouts; i++ {
		p := f.plan(i)
		runStatus, verifyStatus := 200, 200
		if p.Verify == verifyRaise {
			runStatus, verifyStatus = 500, 500
		}
		n := req(RoleDriver, RoleAgent, runStatus, true) + on(RoleAgent, GroupRollout)
		n += req(RoleAgent, RoleResources, 200, true)
		n += req(RoleAgent, RoleAgent, 200, true) + on(RoleAgent, GroupAgent)
		sandbox := false
		for _, turn := range p.Turns {
			n += req(RoleAgent, RoleModel, 200, true) + on(RoleModel, GroupModelCall)
			for _, tool := range turn.Tools {
				status := 200
				if tool.Fail {
					status = 500
				}
				n += req(RoleAgent, RoleResources, status, true)
				if tool.Name == "run_code" && !tool.Fail {
					n += on(RoleResources, GroupSandbox)
					if !sandbox {
						n += on(RoleResources, GroupSandbox)
						sandbox = true
					}
				}
			}
		}
		n += req(RoleAgent, RoleResources, verifyStatus, true) + on(RoleResources, GroupVerify)
		if n > 0 {
			want[i] = n
		}
	}
	run := on(RoleDriver, GroupJob) + req(RoleDriver, RoleAgent, 200, true) + req(RoleAgent, RoleResources, 200, true)
	for _, role := range []string{RoleAgent, RoleModel, RoleResources} {
		run += served(role, 200, false) // GET /: no CLIENT span
		if v.Startup {
			run += (1 + len(serverStages)) * on(role, GroupStartup)
		}
	}
	if v.Startup {
		run += (1 + len(supervisorStages) + 3) * on(RoleDriver, GroupStartup)
	}
	// A request whose caller was gone before its last body message has
	// one send fewer (G3 with DisconnectRace); checkRequests checks that
	// each such request is one.
	sends := map[trace.SpanID]int{}
	for _, s := range truth {
		if strings.HasSuffix(s.Name, " http send") {
			sends[s.ParentID]++
		}
	}
	for i := range truth {
		if s := &truth[i]; isRequestSpan(s) && s.Status != codes.Error && sends[s.SpanID] == 2 {
			if s.IsRolloutTraffic() {
				want[s.Rollout]--
			} else {
				run--
			}
		}
	}
	got := map[int]int{}
	gotRun := 0
	for _, s := range truth {
		if s.IsRolloutTraffic() {
			got[s.Rollout]++
		} else {
			gotRun++
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("spans per rollout %v, the plan and gates predict %v", got, want)
	}
	if gotRun != run {
		t.Errorf("%d run-level spans, predicted %d", gotRun, run)
	}
}

// isRequestSpan: the FastAPI instrumentation's span of a request (SERVER,
// or INTERNAL when carried over), not one of its ASGI children.
func isRequestSpan(s *TruthSpan) bool {
	return s.Group == GroupServer && !strings.HasSuffix(s.Name, " http send") && !strings.HasSuffix(s.Name, " http receive")
}

// checkMembership: the bookkeeping agrees with the parent links. A span's
// parent belongs to the same rollout, except under gym.job (run level) and
// for a carried-over request span, whose parent is the previous request's.
func checkMembership(t *testing.T, truth []TruthSpan) {
	t.Helper()
	byID := map[trace.SpanID]*TruthSpan{}
	for i := range truth {
		byID[truth[i].SpanID] = &truth[i]
	}
	for i := range truth {
		s := &truth[i]
		p, ok := byID[s.ParentID]
		if !ok {
			continue
		}
		leaked := isRequestSpan(s) && s.Kind == trace.SpanKindInternal
		if leaked {
			if !isRequestSpan(p) || p.Kind == trace.SpanKindClient {
				t.Errorf("carried-over span %s %q under %q (%v), want under a request span", s.SpanID, s.Name, p.Name, p.Kind)
			}
			continue
		}
		if p.Rollout != s.Rollout && !(p.Name == "gym.job" && s.Rollout >= 0) {
			t.Errorf("span %q of rollout %d under %q of rollout %d", s.Name, s.Rollout, p.Name, p.Rollout)
		}
	}
}

var serverKeys = []string{"http.scheme", "http.host", "net.host.port", "http.flavor", "http.target", "http.url", "http.method",
	"http.server_name", "http.user_agent", "net.peer.ip", "net.peer.port", "http.route", "http.status_code"}

// wantKeys is the attribute key list Gym gives each span type; withID adds
// nemo.gym.rollout.id where Gym puts it.
func wantKeys(s *TruthSpan, l *consoleSpan, withID bool) []string {
	id := func(keys ...string) []string {
		if !withID {
			return keys
		}
		return slices.Insert(keys, len(keys)-1, "nemo.gym.rollout.id")
	}
	switch {
	case strings.HasSuffix(s.Name, " http receive"):
		if _, typed := l.Attributes["asgi.event.type"]; !typed {
			return []string{} // G3's cancelled disconnect listener
		}
		return []string{"asgi.event.type"}
	case strings.HasSuffix(s.Name, " http send"):
		if l.Attributes["asgi.event.type"] == "http.response.start" {
			return []string{"asgi.event.type", "http.status_code"}
		}
		return []string{"asgi.event.type"}
	case s.Group == GroupServer:
		if s.Name == "POST" {
			return slices.DeleteFunc(slices.Clone(serverKeys), func(k string) bool { return k == "http.route" })
		}
		return serverKeys
	case s.Group == GroupAIOHTTP:
		return []string{"http.method", "http.url", "http.status_code"}
	case s.Name == "HTTP POST":
		return id("http.request.method", "url.full", "http.response.status_code")
	case s.Name == "gym.job":
		return []string{}
	case s.Name == "gym.rollout", s.Name == "gym.verify":
		if withID {
			return []string{"nemo.gym.server.name", "nemo.gym.rollout.id"}
		}
		return []string{"nemo.gym.server.name"}
	case s.Name == "gym.agent.responses", strings.HasPrefix(s.Name, "gym.model."):
		return []string{"nemo.gym.server.name"}
	case s.Name == "gym.sandbox.start":
		return []string{"nemo.gym.sandbox.provider"}
	case s.Name == "gym.sandbox.exec":
		if l.Attributes["nemo.gym.sandbox.return_code"] != float64(0) {
			return []string{"nemo.gym.sandbox.provider", "nemo.gym.sandbox.return_code", "nemo.gym.sandbox.error_type"}
		}
		return []string{"nemo.gym.sandbox.provider", "nemo.gym.sandbox.return_code"}
	case s.Name == "gym.startup", strings.HasPrefix(s.Name, "gym.startup.") && s.Name != "gym.startup.server":
		if s.Name == "gym.startup" {
			return []string{}
		}
		return []string{"nemo.gym.startup.stage"}
	case s.Name == "gym.startup.server":
		return []string{"nemo.gym.server.name", "nemo.gym.server.type"}
	case s.Name == "gym.server.startup":
		return []string{"nemo.gym.server.name", "nemo.gym.server.worker", "nemo.gym.server.type", "process.pid"}
	case strings.HasPrefix(s.Name, "gym.server.startup."):
		return []string{"nemo.gym.server.name", "nemo.gym.server.worker", "nemo.gym.server.type", "process.pid", "nemo.gym.startup.stage"}
	}
	return nil
}

// scopedRoutes get the /ng-rollout/{id}/ prefix with observability on.
var scopedRoutes = []string{"/seed_session", "/v1/responses", "/verify"}

func checkAttributes(t *testing.T, f *Fleet, lines map[string]*consoleSpan, truth []TruthSpan) {
	t.Helper()
	obs := f.cfg.Observability
	var wantRes []string
	for _, k := range f.variant.resourceKeys() {
		wantRes = append(wantRes, string(k))
	}
	for i := range truth {
		s := &truth[i]
		l := lines[s.SpanID.String()]
		if !reflect.DeepEqual(l.resKeys, wantRes) {
			t.Fatalf("%s: resource keys %v, want %v", s.Name, l.resKeys, wantRes)
		}
		if l.Resource.Attributes["service.instance.id"] != f.cfg.RunID+"-rank0" || l.Resource.Attributes["nemo.gym.version"] != f.variant.GymVersion {
			t.Fatalf("%s: resource %v", s.Name, l.Resource.Attributes)
		}
		// The rollout id: on gym.rollout and gym.verify, and on the CLIENT
		// spans of the /run handler's own calls (seed_session, the agent's
		// self-call, verify), only with observability on.
		url, _ := l.Attributes["url.full"].(string)
		withID := obs && s.IsRolloutTraffic() && (s.Name == "gym.rollout" || s.Name == "gym.verify" ||
			(s.Name == "HTTP POST" && strings.Contains(url, "/ng-rollout/") && !strings.HasPrefix(url, f.model.base)))
		if want := wantKeys(s, l, withID); want == nil || !slices.Equal(l.keys, want) {
			t.Fatalf("%s %q (%s): attribute keys %v, want %v", s.Role, s.Name, s.Group, l.keys, want)
		}
		if id, ok := l.Attributes["nemo.gym.rollout.id"]; ok && id != s.RolloutID {
			t.Fatalf("%q carries rollout id %v, the truth says %q", s.Name, id, s.RolloutID)
		}
		target, _ := l.Attributes["http.target"].(string)
		for _, u := range []string{url, target} {
			if u == "" {
				continue
			}
			scoped := slices.ContainsFunc(scopedRoutes, func(r string) bool { return strings.HasSuffix(u, r) }) && s.IsRolloutTraffic() &&
				!strings.HasSuffix(u, "/aggregate_metrics")
			if got := strings.Contains(u, "/ng-rollout/"+s.RolloutID+"/"); got != (obs && scoped) {
				t.Fatalf("%q url %s: /ng-rollout/ prefix %v, want %v", s.Name, u, got, obs && scoped)
			}
		}
		// Statuses: CLIENT spans stay UNSET; SERVER 5xx is ERROR without
		// an event; a semantic span's error carries str(exc) and the event.
		code, _ := l.Attributes["http.status_code"].(float64)
		switch {
		case s.Name == "HTTP POST":
			if s.Status != codes.Unset || len(l.Events) != 0 {
				t.Fatalf("CLIENT span status %v with %d events", s.Status, len(l.Events))
			}
		case isRequestSpan(s):
			if (s.Status == codes.Error) != (code >= 500) || len(l.Events) != 0 {
				t.Fatalf("%q status %v for %v, %d events", s.Name, s.Status, code, len(l.Events))
			}
		case s.Scope == scopeLens && s.Status == codes.Error:
			if len(l.Events) != 1 || l.Events[0].Name != "exception" || l.Events[0].Attributes["exception.message"] != l.Status.Description || l.Status.Description == "" {
				t.Fatalf("%q ERROR %q with events %+v", s.Name, l.Status.Description, l.Events)
			}
		}
		for _, k := range l.keys {
			for _, bad := range []string{"gen_ai.", "nemo.gym.reward", "nemo.gym.turn", "nemo.gym.agent.", "nemo.gym.job."} {
				if strings.HasPrefix(k, bad) {
					t.Fatalf("%q carries %s, which Gym never emits", s.Name, k)
				}
			}
		}
	}
}

// checkRequests: the ASGI children of every request span by method and
// status, in G3 the disconnect listener's receive (untyped, or
// http.disconnect with the last send missing when the caller was gone),
// one CLIENT span per request (a CLIENT span has at most one child, and
// one when its callee extracts), the run-level traffic.
func checkRequests(t *testing.T, f *Fleet, lines map[string]*consoleSpan, truth []TruthSpan) {
	t.Helper()
	kids := map[trace.SpanID][]*TruthSpan{}
	byID := map[trace.SpanID]*TruthSpan{}
	for i := range truth {
		kids[truth[i].ParentID] = append(kids[truth[i].ParentID], &truth[i])
		byID[truth[i].SpanID] = &truth[i]
	}
	probes := map[string]int{}
	aggregates := map[string]int{}
	for i := range truth {
		s := &truth[i]
		if isRequestSpan(s) {
			rcv, snd := 0, 0
			var types []string
			for _, k := range kids[s.SpanID] {
				switch {
				case strings.HasSuffix(k.Name, " http receive"):
					rcv++
					typ, _ := lines[k.SpanID.String()].Attributes["asgi.event.type"].(string)
					types = append(types, typ)
				case strings.HasSuffix(k.Name, " http send"):
					snd++
				}
			}
			sort.Strings(types)
			wantRcv, wantSnd := 1, 3
			wantTypes := []string{"http.request"}
			if f.variant.DisconnectReceive {
				wantRcv, wantTypes = 2, []string{"", "http.request"}
				if slices.Contains(types, "http.disconnect") && s.Status != codes.Error {
					wantSnd, wantTypes = 2, []string{"http.disconnect", "http.request"}
				}
			}
			if rcv == wantRcv && !slices.Equal(types, wantTypes) {
				t.Errorf("%s %q: receives of types %q, want %q", s.Service, s.Name, types, wantTypes)
			}
			switch {
			case s.Name == "GET /":
				if !f.variant.DisconnectReceive {
					wantRcv, wantTypes = 0, nil
				}
				probes[s.Service]++
				if s.ParentID.IsValid() || s.IsRolloutTraffic() {
					t.Errorf("probe %s: parent %s, rollout %d", s.Service, s.ParentID, s.Rollout)
				}
			case s.Status == codes.Error:
				wantSnd = 2
			}
			if !f.variant.DisconnectReceive && s.Name != "GET /" && !slices.Equal(types, wantTypes) {
				t.Errorf("%s %q: receives of types %q, want %q", s.Service, s.Name, types, wantTypes)
			}
			if rcv != wantRcv || snd != wantSnd {
				t.Errorf("%s %q (%v): %d receive + %d send, want %d + %d", s.Service, s.Name, s.Status, rcv, snd, wantRcv, wantSnd)
			}
			if strings.HasSuffix(s.Name, "/aggregate_metrics") {
				aggregates[s.Service]++
				if s.IsRolloutTraffic() {
					t.Errorf("/aggregate_metrics counted in rollout %d", s.Rollout)
				}
			}
		}
		if s.Kind == trace.SpanKindClient {
			n := len(kids[s.SpanID])
			callee := map[string]*proc{agentName: f.agent, modelName: f.model, resourcesName: f.resources}[s.Callee]
			want := 0
			if callee != nil && callee.on(GroupServer) {
				want = 1
			}
			if s.Group == GroupHTTPClient && f.cfg.AIOHTTP {
				want = 1 // the aiohttp span
			}
			if f.cfg.ContextLeak > 0 && want == 1 && n == 0 {
				continue // its request span was carried over elsewhere
			}
			if n != want {
				t.Errorf("%s %q to %s: %d children, want %d", s.Service, s.Name, s.Callee, n, want)
			}
		}
		if s.Name == "gym.job" || strings.HasPrefix(s.Name, "gym.startup") || strings.HasPrefix(s.Name, "gym.server.startup") {
			if s.IsRolloutTraffic() {
				t.Errorf("%q counted in rollout %d", s.Name, s.Rollout)
			}
		}
	}
	for _, p := range []*proc{f.agent, f.model, f.resources} {
		want := 0
		if p.on(GroupServer) {
			want = 1
		}
		if probes["nemo-gym/"+p.name] != want {
			t.Errorf("%s: %d health-probe traces, want %d", p.name, probes["nemo-gym/"+p.name], want)
		}
		wantAgg := want
		if p == f.model {
			wantAgg = 0
		}
		if aggregates["nemo-gym/"+p.name] != wantAgg {
			t.Errorf("%s: %d /aggregate_metrics spans, want %d", p.name, aggregates["nemo-gym/"+p.name], wantAgg)
		}
	}
}

// TestStartupTrace: in G3 the supervisor's gym.startup tree and every
// server's gym.server.startup tree are one trace, joined through the
// traceparent each server is handed, and the root is exported last.
func TestStartupTrace(t *testing.T) {
	f := runFleet(t, Config{Seed: 3, Variant: "G3", Rollouts: 2, Protocol: "none", RecordTruth: true, Latency: time.Millisecond})
	var startup []TruthSpan
	for _, s := range f.Truth() {
		if strings.HasPrefix(s.Name, "gym.startup") || strings.HasPrefix(s.Name, "gym.server.startup") {
			startup = append(startup, s)
		}
	}
	if want := 1 + len(supervisorStages) + 3 + 3*(1+len(serverStages)); len(startup) != want {
		t.Fatalf("%d start-up spans, want %d", len(startup), want)
	}
	byID := map[trace.SpanID]TruthSpan{}
	for _, s := range startup {
		byID[s.SpanID] = s
		if s.TraceID != startup[0].TraceID {
			t.Fatalf("start-up spans in several traces")
		}
	}
	last := startup[len(startup)-1]
	if last.Name != "gym.startup" || last.ParentID.IsValid() || last.Service != "nemo-gym/supervisor" {
		t.Fatalf("last start-up span ended is %q (parent %s) of %s, want the supervisor's root", last.Name, last.ParentID, last.Service)
	}
	servers := 0
	for _, s := range startup {
		if s.Name == "gym.server.startup" {
			servers++
			if p := byID[s.ParentID]; p.Name != "gym.startup.server" || p.Service != "nemo-gym/supervisor" || s.Service == p.Service {
				t.Errorf("%s's gym.server.startup under %q of %s", s.Service, p.Name, p.Service)
			}
		}
	}
	if servers != 3 {
		t.Fatalf("%d gym.server.startup trees, want 3", servers)
	}
	// Off when the group is: G3 without startup, and G2 at all.
	for _, cfg := range []Config{{Variant: "G3", Spec: "job,server,http_client,rollout"}, {Variant: "G2", Spec: "all"}} {
		cfg.Seed, cfg.Rollouts, cfg.Protocol, cfg.RecordTruth = 3, 1, "none", true
		for _, s := range runFleet(t, cfg).Truth() {
			if strings.Contains(s.Name, "startup") {
				t.Fatalf("%s %q: start-up span %q", cfg.Variant, cfg.Spec, s.Name)
			}
		}
	}
}

func TestResolve(t *testing.T) {
	g1, _ := LookupVariant("")
	g2, _ := LookupVariant("g2")
	g3, _ := LookupVariant("G3")
	tests := []struct {
		v     *Variant
		spec  string
		on    bool
		want  []string
		warns string
	}{
		{g1, "", true, []string{"http_client", "job", "rollout", "server"}, ""},
		{g1, " Default , ,", true, []string{"http_client", "job", "rollout", "server"}, ""},
		{g1, "per_rollout", true, []string{"agent", "http_client", "model_call", "rollout", "server", "verify"}, ""},
		{g1, "server,VERIFY", true, []string{"server", "verify"}, ""},
		{g1, "default,concurrency", false, nil, "Unknown span group or preset: 'concurrency'. Valid options: ['agent', 'all', 'checkpoint', 'default', 'evaluate'"},
		{g2, "default,concurrency,verify", true, []string{"http_client", "job", "rollout", "server", "verify"}, "dropped: concurrency"},
		{g3, "", true, []string{"http_client", "job", "rollout", "server", "startup"}, ""},
		{g3, "all", true, []string{"agent", "http_client", "job", "model_call", "rollout", "sandbox", "server", "startup", "verify"}, ""},
	}
	for _, tt := range tests {
		r := tt.v.Resolve(tt.spec)
		var got []string
		for g := range r.Groups {
			got = append(got, g)
		}
		slices.Sort(got)
		if r.On != tt.on || !slices.Equal(got, tt.want) || !strings.Contains(r.Warning, tt.warns) || (tt.warns == "") != (r.Warning == "") {
			t.Errorf("%s Resolve(%q) = on %v %v %q; want on %v %v warning containing %q", tt.v.Name, tt.spec, r.On, got, r.Warning, tt.on, tt.want, tt.warns)
		}
	}
	if len(g1.Resolve("all").Groups) != 15 {
		t.Errorf("G1 all: %d groups, want the 15 of G1", len(g1.Resolve("all").Groups))
	}
	if _, err := LookupVariant("G9"); err == nil || !strings.Contains(err.Error(), "G1, G1c, G2, G3") {
		t.Errorf("LookupVariant(G9) = %v", err)
	}
}

func TestPlanDeterministic(t *testing.T) {
	for n := 0; n < 50; n++ {
		a, b := planRollout(5, n, 1), planRollout(5, n, 1)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("rollout %d: plans differ", n)
		}
		if a.ID != fmt.Sprintf("%d-0", n) || len(a.Turns) < 1 || len(a.Turns) > 4 || len(a.Turns[len(a.Turns)-1].Tools) != 0 {
			t.Fatalf("rollout %d: plan %+v", n, a)
		}
	}
}

func TestStartErrors(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"unknown protocol", Config{Protocol: "zipkin"}, `protocol "zipkin"`},
		{"grpc without endpoint", Config{Protocol: "grpc"}, "no endpoint"},
		{"remote endpoint", Config{Protocol: "http", Endpoint: "10.1.2.3:4318"}, "only loopback"},
		{"console without writer", Config{Protocol: "console"}, "no writer"},
		{"negative rollouts", Config{Protocol: "none", Rollouts: -1}, "rollouts -1"},
		{"leak out of range", Config{Protocol: "none", ContextLeak: 1.5}, "context leak 1.5"},
		{"unknown variant", Config{Protocol: "none", Variant: "G7"}, `gym variant "G7"`},
		{"negative rollouts per task", Config{Protocol: "none", RolloutsPerTask: -2}, "rollouts per task -2"},
		{"evidence dir a file", Config{Protocol: "none", EvidenceDir: "fleet_test.go"}, "evidence dir: mkdir fleet_test.go"},
		{"unknown process spec", Config{Protocol: "none", ProcessSpecs: map[string]string{"judge": "all"}}, `process spec "judge": no such process`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Start(context.Background(), tt.cfg)
			if err == nil {
				f.Shutdown(context.Background())
				t.Fatalf("Start(%+v) succeeded", tt.cfg)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Start error %q, want it to contain %q", err, tt.want)
			}
		})
	}
}

// TestForeverStopsOnShutdown: Rollouts 0 runs until Shutdown, which flushes;
// every finished run has its gym.job and its /aggregate_metrics call.
func TestForeverStopsOnShutdown(t *testing.T) {
	f, err := Start(context.Background(), Config{Seed: 2, Spec: "all", Protocol: "none", RecordTruth: true, Rate: 200, RunSize: 5})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for f.Stats().Completed < 12 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if err := f.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	st := f.Stats()
	if st.Completed < 12 || st.Completed != st.Started {
		t.Fatalf("stats after shutdown %+v", st)
	}
	jobs, aggs := 0, 0
	for _, s := range f.Truth() {
		switch s.Name {
		case "gym.job":
			jobs++
		case "POST /aggregate_metrics":
			aggs++
		}
	}
	runs := int((st.Started + 4) / 5)
	full := int(st.Started / 5)
	if jobs != runs || aggs < 2*full || aggs > 2*runs {
		t.Fatalf("%d gym.job and %d /aggregate_metrics spans for %d rollouts in runs of 5", jobs, aggs, st.Started)
	}
}

func BenchmarkFleetRollouts(b *testing.B) {
	b.ReportAllocs()
	f, err := Start(context.Background(), Config{Seed: 1, Spec: "all", Rollouts: b.N, Protocol: "none"})
	if err != nil {
		b.Fatal(err)
	}
	f.Wait()
	if err := f.Shutdown(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(f.Stats().Spans)/float64(b.N), "spans/rollout")
}

// TestConnectionErrorsRetriedInOneSpan: a request whose connection fails is
// tried three times inside its one CLIENT span (each try its own aiohttp
// span), which ends ERROR; an error answer is never retried.
func TestConnectionErrorsRetriedInOneSpan(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String() + "/run"
	ln.Close()
	ctx := context.Background()
	f, err := Start(ctx, Config{Seed: 1, Spec: "all", Rollouts: 1, AIOHTTP: true, Protocol: "none", RecordTruth: true})
	if err != nil {
		t.Fatal(err)
	}
	f.Wait()
	if _, _, err := f.agent.post(ctx, dead, -1, "", map[string]any{}); err == nil {
		t.Fatal("post to a closed port succeeded")
	}
	if err := f.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	kids := map[trace.SpanID]int{}
	for _, s := range f.Truth() {
		if s.Group == GroupAIOHTTP {
			kids[s.ParentID]++
		}
	}
	failed := 0
	for _, s := range f.Truth() {
		if s.Group != GroupHTTPClient {
			continue
		}
		want := 1
		if s.Status == codes.Error {
			failed++
			want = maxAttempts
		}
		if kids[s.SpanID] != want {
			t.Errorf("%s CLIENT span (%v) has %d tries, want %d", s.Service, s.Status, kids[s.SpanID], want)
		}
	}
	if failed != 1 {
		t.Errorf("%d CLIENT spans ERROR, want the one whose connection failed", failed)
	}
}
