package rollouts

import (
	"slices"
	"testing"
	"time"

	"github.com/nemo-gym/gymtrace/model"
)

// Each phase of buildStructure is tested here on its own: the build is
// taken to the phase's inputs on a small capture, the phase runs, and its
// own effect is checked.

const ms = int64(time.Millisecond)

// serverOff is the capture of TestServerOffRolloutsMatchedWhole: a job
// whose driver calls /run twice (A at 0-1000ms, B at 10-2000ms), and two
// gym.rollout roots (server off in the agent), Y at 1-950ms, which only A
// fits, and X at 12-990ms, which fits A best but B too. With verify, the
// driver also calls /verify at 5-900ms (C).
type serverOff struct {
	snap *model.Snapshot
	t0   int64
}

func newServerOff(t *testing.T, withVerify bool) *serverOff {
	t.Helper()
	st := model.NewStore(model.Options{QueueLen: 4})
	t.Cleanup(st.Close)
	f := newFleet(t, st)
	t0 := f.Clock
	at := func(start, end int64) {
		sp := &f.Spans.Spans[len(f.Spans.Spans)-1]
		sp.Start, sp.End = t0+start*ms, t0+end*ms
	}
	call := func(parent model.SpanID, url string, start, end int64) {
		f.Add(parent, "nemo-gym/orchestrator", "HTTP POST", model.KindClient, kv{K: "http.request.method", V: "POST"}, kv{K: "url.full", V: url})
		at(start, end)
	}
	f.NewTrace()
	job := f.Add(model.SpanID{}, "nemo-gym/orchestrator", "gym.job", model.KindInternal)
	at(0, 3000)
	call(job, "http://127.0.0.1:8001/run", 0, 1000)  // A
	call(job, "http://127.0.0.1:8001/run", 10, 2000) // B
	if withVerify {
		call(job, "http://127.0.0.1:8003/verify", 5, 900) // C
	}
	f.NewTrace()
	f.Add(model.SpanID{}, "nemo-gym/agent", "gym.rollout", model.KindInternal)
	at(1, 950) // Y
	f.NewTrace()
	f.Add(model.SpanID{}, "nemo-gym/agent", "gym.rollout", model.KindInternal)
	at(12, 990) // X
	return &serverOff{snap: f.Flush(), t0: t0}
}

// testBuild takes a fresh finder to the first phase of a structure of snap.
func testBuild(snap *model.Snapshot) *build {
	e := NewFinder()
	e.gen++
	e.sync(snap)
	e.cutAll(snap)
	b := &build{e: e, st: &Structure{src: snap, Suspect: map[string][]Suspect{}}}
	b.listUnits(snap)
	return b
}

// hostsOf returns the hosts b's units serve.
func hostsOf(b *build) *hostIndex {
	h := &hostIndex{hostOf: map[string]model.ResourceID{}, resHost: map[model.ResourceID]string{}}
	b.serveHosts(h)
	return h
}

// anchorsOf returns b's anchors.
func anchorsOf(b *build) *anchors {
	a := &anchors{byID: map[string]int{}, traceRoll: map[model.TraceID]int{}}
	b.anchor(a)
	return a
}

// needsOf marks b's units that need a caller.
func needsOf(b *build) ([]bool, int) {
	needing := make([]bool, len(b.us))
	return needing, b.markNeeds(anchorsOf(b), needing)
}

// unitAt returns the index of the unit that starts startMS after t0.
func unitAt(t *testing.T, b *build, t0, startMS int64) int {
	t.Helper()
	for i := range b.us {
		if b.us[i].info.start == t0+startMS*ms {
			return i
		}
	}
	t.Fatalf("no unit starts at %dms", startMS)
	return -1
}

// clientAt returns the index among b.clients of the call that starts
// startMS after t0.
func clientAt(t *testing.T, b *build, t0, startMS int64) int {
	t.Helper()
	for k := range b.clients {
		if b.clients[k].c.start == t0+startMS*ms {
			return k
		}
	}
	t.Fatalf("no call starts at %dms", startMS)
	return -1
}

// toNeeds takes b through the phases before matching.
func toNeeds(b *build) {
	hosts := hostsOf(b)
	needing, nneed := needsOf(b)
	if nneed > 0 {
		b.listClients()
	}
	b.findCandidates(needing, nneed, hosts)
}

// needOf returns unit u's need, nil when it has none.
func needOf(b *build, u int) *need {
	for n := range b.needs {
		if b.needs[n].unit == u {
			return &b.needs[n]
		}
	}
	return nil
}

func TestBuildUnitsAndUnionFind(t *testing.T) {
	snap := gymCapture(t, 3, 1, 1, true, nil)
	b := testBuild(snap)
	frags := len(snap.Jobs)
	for _, r := range snap.Rollouts {
		frags += len(r.Fragments)
	}
	if len(b.us) < frags {
		t.Fatalf("%d units for %d fragments", len(b.us), frags)
	}
	for i := range b.us {
		if b.us.find(i) != i || b.us[i].graft != -1 {
			t.Fatalf("unit %d starts in a set of its own, ungrafted: find %d, graft %d", i, b.us.find(i), b.us[i].graft)
		}
	}
	if len(b.us) < 3 {
		t.Fatalf("%d units, want at least 3", len(b.us))
	}
	b.us.union(0, 1)
	b.us.union(1, 2)
	if r := b.us.find(0); r != 2 || b.us.find(1) != 2 {
		t.Errorf("after union(0,1), union(1,2): roots %d %d, want the last parent, 2", r, b.us.find(1))
	}
}

func TestBuildServeHosts(t *testing.T) {
	st := model.NewStore(model.Options{QueueLen: 4})
	t.Cleanup(st.Close)
	f := newFleet(t, st)
	f.Job(2, 1, 1)
	b := testBuild(f.Flush())
	h := hostsOf(b)
	for svc, host := range map[string]string{"nemo-gym/agent": "127.0.0.1:8001", "nemo-gym/model": "127.0.0.1:8002", "nemo-gym/resources": "127.0.0.1:8003"} {
		id := f.Res[svc]
		if h.hostOf[host] != id || h.resHost[id] != host {
			t.Errorf("%s: hostOf %d, resHost %q; want %d and %q", svc, h.hostOf[host], h.resHost[id], id, host)
		}
	}
}

func TestBuildAnchor(t *testing.T) {
	c := newServerOff(t, false)
	b := testBuild(c.snap)
	a := anchorsOf(b)
	y, x := unitAt(t, b, c.t0, 1), unitAt(t, b, c.t0, 12)
	if !a.anyRollout || !a.runCalls {
		t.Errorf("anyRollout %v, runCalls %v: want both (two gym.rollout units, two dangling calls to /run)", a.anyRollout, a.runCalls)
	}
	for _, u := range []int{y, x} {
		if j := a.traceRoll[b.us[u].f.TraceID]; j != u {
			t.Errorf("trace of unit %d anchored to %d", u, j)
		}
	}
	if b.us.find(x) == b.us.find(y) {
		t.Error("two rollouts naming no id were joined")
	}
}

func TestBuildMarkNeedsAndCandidates(t *testing.T) {
	c := newServerOff(t, true)
	b := testBuild(c.snap)
	needing, nneed := needsOf(b)
	y, x := unitAt(t, b, c.t0, 1), unitAt(t, b, c.t0, 12)
	if nneed != 2 || !needing[y] || !needing[x] {
		t.Fatalf("needing %v (%d): want the two gym.rollout units, %d and %d", needing, nneed, y, x)
	}
	b.listClients()
	if len(b.clients) != 3 || !slices.IsSortedFunc(b.clients, func(p, q cref) int { return int(p.c.start - q.c.start) }) {
		t.Fatalf("%d calls listed, want the 3 dangling ones by start", len(b.clients))
	}
	b.findCandidates(needing, nneed, hostsOf(b))
	ka, kb := clientAt(t, b, c.t0, 0), clientAt(t, b, c.t0, 10)
	if got := needOf(b, y).cand(); !slices.Equal(got, []int{ka}) {
		t.Errorf("Y's candidates %v, want A only (%d): B starts after it, C is no /run", got, ka)
	}
	if got := needOf(b, x).cand(); !slices.Equal(got, []int{ka, kb}) {
		t.Errorf("X's candidates %v, want A and B (%d %d)", got, ka, kb)
	}
}

func TestBuildNarrowByRoute(t *testing.T) {
	c := newServerOff(t, true)
	b := testBuild(c.snap)
	toNeeds(b)
	y, x := unitAt(t, b, c.t0, 1), unitAt(t, b, c.t0, 12)
	ka, kc := clientAt(t, b, c.t0, 0), clientAt(t, b, c.t0, 5)
	// Y's one candidate says gym.rollout comes of /run: of X's A and C,
	// A stays.
	*needOf(b, x).cands = []int{ka, kc}
	b.narrowByRoute()
	if got := needOf(b, x).cand(); !slices.Equal(got, []int{ka}) {
		t.Errorf("X's candidates %v after narrowing, want A (%d)", got, ka)
	}
	if got := needOf(b, y).cand(); !slices.Equal(got, []int{ka}) {
		t.Errorf("Y's one candidate changed: %v", got)
	}
}

// grafted returns the client unit u hangs under and whether it does.
func grafted(b *build, u int) (int, bool) {
	if b.us[u].how() != attrClient {
		return -1, false
	}
	for k := range b.clients {
		if b.clients[k].unit == b.us[u].graft && b.clients[k].c.span == b.us[u].at {
			return k, true
		}
	}
	return -1, false
}

func TestBuildMatchRunsWhole(t *testing.T) {
	c := newServerOff(t, false)
	b := testBuild(c.snap)
	toNeeds(b)
	y, x := unitAt(t, b, c.t0, 1), unitAt(t, b, c.t0, 12)
	ka, kb := clientAt(t, b, c.t0, 0), clientAt(t, b, c.t0, 10)
	b.matchRuns()
	if k, ok := grafted(b, y); !ok || k != ka {
		t.Errorf("Y under call %d (%v), want A (%d)", k, ok, ka)
	}
	if k, ok := grafted(b, x); !ok || k != kb {
		t.Errorf("X under call %d (%v), want B (%d)", k, ok, kb)
	}
	for _, n := range b.needs {
		if n.unit >= 0 {
			t.Errorf("unit %d still needs a caller", n.unit)
		}
	}
}

func TestBuildMatchClosestIsGreedy(t *testing.T) {
	c := newServerOff(t, false)
	b := testBuild(c.snap)
	toNeeds(b)
	y, x := unitAt(t, b, c.t0, 1), unitAt(t, b, c.t0, 12)
	ka := clientAt(t, b, c.t0, 0)
	b.matchClosest()
	// X is A's closest: the greedy pairing gives it A, and Y none.
	if k, ok := grafted(b, x); !ok || k != ka {
		t.Errorf("X under call %d (%v), want A (%d), its closest", k, ok, ka)
	}
	if _, ok := grafted(b, y); ok || needOf(b, y) == nil {
		t.Errorf("Y matched though its only call was taken")
	}
}

func TestBuildMatchLeaksWhole(t *testing.T) {
	c := newServerOff(t, false)
	b := testBuild(c.snap)
	y, x := unitAt(t, b, c.t0, 1), unitAt(t, b, c.t0, 12)
	// Taken as carried-over request spans (a throwaway finder's cache),
	// Y and X are matched on time alone, as a whole.
	b.us[y].info.flags |= flagLeak
	b.us[x].info.flags |= flagLeak
	toNeeds(b)
	ka, kb := clientAt(t, b, c.t0, 0), clientAt(t, b, c.t0, 10)
	b.matchLeaks()
	if k, ok := grafted(b, y); !ok || k != ka {
		t.Errorf("leak Y under call %d (%v), want A (%d)", k, ok, ka)
	}
	if k, ok := grafted(b, x); !ok || k != kb {
		t.Errorf("leak X under call %d (%v), want B (%d)", k, ok, kb)
	}
}

func TestAugmentReroutes(t *testing.T) {
	adj := map[int][]int{0: {10, 11}, 1: {10}}
	if got := augment([]int{0, 1}, adj, true); got[10] != 1 || got[11] != 0 {
		t.Errorf("whole matching %v, want 10->1, 11->0", got)
	}
	if got := augment([]int{0, 1}, adj, false); got[10] != 0 || len(got) != 1 {
		t.Errorf("greedy matching %v, want 10->0 only", got)
	}
}

func TestBuildSameRollout(t *testing.T) {
	c := newServerOff(t, false)
	b := testBuild(c.snap)
	toNeeds(b)
	x := unitAt(t, b, c.t0, 12)
	ua, ub := int(b.clients[clientAt(t, b, c.t0, 0)].unit), int(b.clients[clientAt(t, b, c.t0, 10)].unit)
	// X's candidates, the driver's two calls to /run, are two rollouts'.
	b.sameRollout()
	if b.us.find(x) != x || b.us[x].how() != attrNone {
		t.Fatalf("X joined set %d (how %d) though its candidates are two rollouts'", b.us.find(x), b.us[x].how())
	}
	// Of one rollout, they make X's certain.
	b.us.union(ua, ub)
	b.sameRollout()
	if b.us.find(x) != b.us.find(ub) || b.us[x].how() != attrRollout {
		t.Errorf("X in set %d (how %d), want its calls' %d by rollout", b.us.find(x), b.us[x].how(), b.us.find(ub))
	}
}

func TestBuildSuspectByRoute(t *testing.T) {
	c := newServerOff(t, false)
	b := testBuild(c.snap)
	toNeeds(b)
	y := unitAt(t, b, c.t0, 1)
	ka, kb := clientAt(t, b, c.t0, 0), clientAt(t, b, c.t0, 10)
	b.attachMatched(map[int]int{ka: slices.IndexFunc(b.needs, func(n need) bool { return n.unit == y })})
	// A's route opened Y in a trace of its own; B, on that route and
	// unused, did the same in a unit not seen apart.
	b.suspectByRoute()
	want := [][2]int{{int(b.clients[kb].unit), y}}
	if !slices.Equal(b.st.suspectUnits, want) {
		t.Errorf("suspects %v, want %v", b.st.suspectUnits, want)
	}
}

// standalone is a capture of rollouts with no calls (each a gym.rollout
// root, at the given ms) and one /verify request root at 100ms, which no
// call explains.
func standalone(t *testing.T, rollouts ...[2]int64) (*model.Snapshot, int64) {
	t.Helper()
	st := model.NewStore(model.Options{QueueLen: 4})
	t.Cleanup(st.Close)
	f := newFleet(t, st)
	t0 := f.Clock
	at := func(start, end int64) {
		sp := &f.Spans.Spans[len(f.Spans.Spans)-1]
		sp.Start, sp.End = t0+start*ms, t0+end*ms
	}
	for _, r := range rollouts {
		f.NewTrace()
		f.Add(model.SpanID{}, "nemo-gym/agent", "gym.rollout", model.KindInternal)
		at(r[0], r[1])
	}
	f.NewTrace()
	f.Add(model.SpanID{}, "nemo-gym/resources", "POST /verify", model.KindServer, kv{K: "http.target", V: "/verify"})
	at(100, 200)
	return f.Flush(), t0
}

// toLastResort takes b through every phase before lastResort.
func toLastResort(b *build) ([]bool, []window) {
	toNeeds(b)
	b.narrowByRoute()
	b.matchLeaks()
	b.matchRuns()
	b.matchClosest()
	b.sameRollout()
	has := make([]bool, len(b.us))
	n := b.rolloutRoots(has)
	b.suspectByRoute()
	return has, b.windows(make([]window, 0, n))
}

func TestBuildWindowsAndLastResort(t *testing.T) {
	t.Run("one rollout running", func(t *testing.T) {
		snap, t0 := standalone(t, [2]int64{0, 1000})
		b := testBuild(snap)
		has, wins := toLastResort(b)
		r, v := unitAt(t, b, t0, 0), unitAt(t, b, t0, 100)
		if len(wins) != 1 || int(wins[0].root) != b.us.find(r) {
			t.Fatalf("windows %v, want the rollout's", wins)
		}
		b.lastResort(has, wins)
		if b.us.find(v) != b.us.find(r) || b.us[v].how() != attrWindow {
			t.Errorf("verify in set %d (how %d), want the rollout's %d by window", b.us.find(v), b.us[v].how(), b.us.find(r))
		}
	})
	t.Run("two running", func(t *testing.T) {
		snap, t0 := standalone(t, [2]int64{0, 1000}, [2]int64{50, 900})
		b := testBuild(snap)
		has, wins := toLastResort(b)
		r1, r2, v := unitAt(t, b, t0, 0), unitAt(t, b, t0, 50), unitAt(t, b, t0, 100)
		b.lastResort(has, wins)
		if b.us.find(v) == b.us.find(r1) || b.us.find(v) == b.us.find(r2) || b.us[v].how() != attrNone {
			t.Errorf("verify joined set %d, want none of the two rollouts'", b.us.find(v))
		}
		want := [][2]int{{r1, v}, {r2, v}}
		got := slices.Clone(b.st.suspectUnits)
		slices.SortFunc(got, func(p, q [2]int) int { return p[0] - q[0] })
		slices.SortFunc(want, func(p, q [2]int) int { return p[0] - q[0] })
		if !slices.Equal(got, want) {
			t.Errorf("suspects %v, want %v: each rollout it may be", b.st.suspectUnits, want)
		}
	})
}
