package tui

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/model"
)

func TestMain(m *testing.M) {
	// Goldens are plain text: pin the colour profile whatever the terminal.
	lipgloss.SetColorProfile(termenv.Ascii)
	lipgloss.SetHasDarkBackground(true)
	os.Exit(m.Run())
}

// t0 is the start of every built capture.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// builder makes NeMo Gym-shaped spans by hand into a real store.
type builder struct {
	st     *model.Store
	l      *model.Local
	res    map[string]model.ResourceID
	nextID uint64
}

func newBuilder(tb testing.TB) *builder {
	tb.Helper()
	st := model.NewStore(model.Options{Now: func() time.Time { return t0 }})
	tb.Cleanup(st.Close)
	return &builder{st: st, l: model.NewLocal(st.Interner()), res: map[string]model.ResourceID{}}
}

func (b *builder) str(s string) model.Str { return b.l.Intern([]byte(s)) }

func (b *builder) resource(server string) model.ResourceID {
	if id, ok := b.res[server]; ok {
		return id
	}
	var ab model.AttrBuilder
	svc := "nemo-gym/" + server
	ab.String(b.l, b.str("service.name"), []byte(svc))
	ab.String(b.l, b.str("nemo.gym.server.name"), []byte(server))
	ab.String(b.l, b.str("nemo.gym.service_group"), []byte("nemo-gym"))
	id := b.st.Interner().InternResource(ab.Sorted(b.st.Interner()), b.str(svc))
	b.res[server] = id
	return id
}

// node is one span of a tree to build; durations are in milliseconds and a
// parent lasts as long as its children plus 1 ms gaps.
type node struct {
	name   string
	kind   model.Kind
	server string
	ms     int64
	rid    string
	url    string
	err    string // status message; non-empty means ERROR with an exception event
	stack  string // the exception's stack trace
	trunc  bool
	kids   []node
}

func (n node) dur() int64 {
	if len(n.kids) == 0 {
		return n.ms
	}
	d := int64(1)
	for _, k := range n.kids {
		d += k.dur() + 1
	}
	return max(d, n.ms)
}

func (b *builder) id() model.SpanID {
	b.nextID++
	var s model.SpanID
	binary.BigEndian.PutUint64(s[:], b.nextID)
	return s
}

// emit appends the spans of n (children first, as exporters send them).
func (b *builder) emit(out model.Batch, trace model.TraceID, parent model.SpanID, start int64, n node) (model.Batch, model.SpanID) {
	id := b.id()
	at := start + int64(time.Millisecond)
	for _, k := range n.kids {
		out, _ = b.emit(out, trace, id, at, k)
		at += (k.dur() + 1) * int64(time.Millisecond)
	}
	var ab model.AttrBuilder
	if n.rid != "" {
		ab.String(b.l, b.str(model.RolloutIDKey), []byte(n.rid))
	}
	if n.url != "" {
		ab.String(b.l, b.str("url.full"), []byte(n.url))
		ab.String(b.l, b.str("http.request.method"), []byte("POST"))
	}
	sp := model.Span{
		SpanID: id,
		Start:  start, End: start + n.dur()*int64(time.Millisecond),
		Name: b.str(n.name), Resource: b.resource(n.server), Kind: n.kind,
		Attrs: ab.Attrs(),
	}
	sp.SetWireSize(120)
	if n.err != "" {
		sp.Status = model.StatusError
		var ev model.AttrBuilder
		ev.String(b.l, b.str("exception.type"), []byte("ValueError"))
		ev.String(b.l, b.str("exception.message"), []byte(n.err))
		if n.stack != "" {
			ev.String(b.l, b.str("exception.stacktrace"), []byte(n.stack))
		}
		sp.Extra = &model.Extra{StatusMessage: n.err, Events: []model.Event{{Time: sp.End, Name: b.str("exception"), Attrs: ev.Attrs()}}}
		sp.SetFlags(model.FlagException)
	}
	if n.trunc {
		sp.SetFlags(model.FlagTruncated)
	}
	out.Append(trace, parent, sp)
	return out, id
}

// rolloutTree is one rollout as NeMo Gym emits it under "all": the driver's
// call to /run, the agent's handler, turns model calls and a verify call.
func rolloutTree(rid string, turns int, fail bool) node {
	call := func(route, server string, inner node) node {
		return node{name: "HTTP POST", kind: model.KindClient, server: "simple_agent", url: "http://127.0.0.1:8000/ng-rollout/" + rid + route,
			kids: []node{{name: "POST " + route, kind: model.KindServer, server: server, kids: []node{inner}}}}
	}
	var steps []node
	for i := 0; i < turns; i++ {
		steps = append(steps, call("/v1/responses", "policy_model", node{name: "gym.model.responses", kind: model.KindInternal, server: "policy_model", rid: rid, ms: 150 + int64(i)*37}))
	}
	verify := node{name: "gym.verify", kind: model.KindInternal, server: "example_tools", rid: rid, ms: 20}
	if fail {
		verify.err = "verifier rejected the answer"
	}
	steps = append(steps, call("/verify", "example_tools", verify))
	return node{name: "HTTP POST", kind: model.KindClient, server: "rollout_collection", url: "http://127.0.0.1:8000/run", kids: []node{
		{name: "POST /run", kind: model.KindServer, server: "simple_agent", kids: []node{
			{name: "POST /run http receive", kind: model.KindInternal, server: "simple_agent", ms: 1},
			{name: "gym.rollout", kind: model.KindInternal, server: "simple_agent", rid: rid, kids: steps},
			{name: "POST /run http send", kind: model.KindInternal, server: "simple_agent", ms: 1},
		}},
	}}
}

// capture builds n rollouts; with job they hang under one gym.job span in
// one trace, as span_groups "all" captures them.
func (b *builder) capture(tb testing.TB, n int, job bool) {
	tb.Helper()
	var spans model.Batch
	var jobTrace model.TraceID
	var jobID model.SpanID
	if job {
		jobTrace = traceID(999)
		jobID = b.id()
	}
	for i := 0; i < n; i++ {
		rid := fmt.Sprintf("r%04d", i)
		tree := rolloutTree(rid, 1+i%3, i%4 == 1)
		start := t0.UnixNano() + int64(i)*int64(700*time.Millisecond)
		trace := traceID(i)
		var parent model.SpanID
		if job {
			trace, parent = jobTrace, jobID
		}
		spans, _ = b.emit(spans, trace, parent, start, tree)
	}
	if job {
		job := model.Span{SpanID: jobID, Start: t0.UnixNano() - int64(time.Millisecond),
			End: t0.UnixNano() + int64(n)*int64(700*time.Millisecond) + int64(time.Second), Name: b.str("gym.job"),
			Resource: b.resource("rollout_collection"), Kind: model.KindInternal}
		job.SetWireSize(100)
		spans.Append(jobTrace, model.SpanID{}, job)
	}
	if err := b.st.Add(spans); err != nil {
		tb.Fatalf("add: %v", err)
	}
	b.st.Sync()
}

func traceID(i int) model.TraceID {
	var t model.TraceID
	binary.BigEndian.PutUint64(t[8:], uint64(i)+1)
	t[0] = 0xab
	return t
}

// newTestModel builds a model over b's store, sized w×h, with the first
// snapshot and its analyses applied.
func newTestModel(tb testing.TB, b *builder, w, h int, current string) Model {
	tb.Helper()
	reg := testRegistry()
	cur, err := reg.Parse(current)
	if err != nil {
		tb.Fatalf("parse %q: %v", current, err)
	}
	m := New(Options{Source: b.st, Registry: reg, Current: cur, CurrentSpec: current, Title: "capture.jsonl",
		SnippetPath: filepath.Join(tb.TempDir(), SnippetFile), Now: func() time.Time { return t0.Add(time.Hour) }})
	m.refresh = time.Nanosecond
	m = send(tb, m, tea.WindowSizeMsg{Width: w, Height: h})
	return run(tb, m, m.Init())
}

// send delivers msg and runs the commands it returns.
func send(tb testing.TB, m Model, msg tea.Msg) Model {
	tb.Helper()
	next, cmd := m.Update(msg)
	return run(tb, next.(Model), cmd)
}

// run executes cmd and every command its messages return, feeding the
// messages back, except the refresh that would wait for the next change.
func run(tb testing.TB, m Model, cmd tea.Cmd) Model {
	tb.Helper()
	queue := []tea.Cmd{cmd}
	for steps := 0; len(queue) > 0; steps++ {
		if steps > 10_000 {
			tb.Fatalf("commands do not settle")
		}
		c := queue[0]
		queue = queue[1:]
		if c == nil {
			continue
		}
		msg := c()
		switch msg := msg.(type) {
		case nil, refreshMsg, clockMsg:
			continue
		case tea.BatchMsg:
			queue = append(queue, msg...)
			continue
		case tea.QuitMsg:
			continue
		}
		next, more := m.Update(msg)
		m = next.(Model)
		queue = append(queue, more)
	}
	return m
}

// keys sends each key in turn. Names are as key.Matches sees them.
func keys(tb testing.TB, m Model, ks ...string) Model {
	tb.Helper()
	for _, k := range ks {
		m = send(tb, m, keyMsg(k))
	}
	return m
}

func keyMsg(k string) tea.KeyMsg {
	switch k {
	case "enter":
		return tea.KeyMsg{Type: tea.KeyEnter}
	case "esc":
		return tea.KeyMsg{Type: tea.KeyEsc}
	case "tab":
		return tea.KeyMsg{Type: tea.KeyTab}
	case "shift+tab":
		return tea.KeyMsg{Type: tea.KeyShiftTab}
	case "up":
		return tea.KeyMsg{Type: tea.KeyUp}
	case "down":
		return tea.KeyMsg{Type: tea.KeyDown}
	case "pgdown":
		return tea.KeyMsg{Type: tea.KeyPgDown}
	case "ctrl+c":
		return tea.KeyMsg{Type: tea.KeyCtrlC}
	case " ", "space":
		return tea.KeyMsg{Type: tea.KeySpace, Runes: []rune{' '}}
	case "end":
		return tea.KeyMsg{Type: tea.KeyEnd}
	case "backspace":
		return tea.KeyMsg{Type: tea.KeyBackspace}
	}
	return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(k)}
}

// typeText sends each rune of s as a key.
func typeText(tb testing.TB, m Model, s string) Model {
	tb.Helper()
	for _, r := range s {
		m = send(tb, m, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}})
	}
	return m
}

// testRegistry is the Gym variant the test captures were made as: the
// simulated fleet's, G1c (G1's groups and the concurrency metric).
func testRegistry() *groups.Registry {
	v, err := groups.LookupVariant("G1c")
	if err != nil {
		panic(err)
	}
	return v.Registry()
}
