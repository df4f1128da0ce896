package tui

import (
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/internal/testfile"
	"github.com/nemo-gym/gymtrace/model"
	"github.com/nemo-gym/gymtrace/receiver"
)

var (
	liveRate = flag.Int("live-rate", 200_000, "spans/s the live benchmarks submit")
	liveDur  = flag.Duration("live-dur", 10*time.Second, "how long the live benchmarks run")
	liveSlow = flag.Duration("live-slow", 0, "BenchmarkLiveKeys lists what each key slower than this waited behind")
)

// flood submits copies of the real Gym run's request (every request of a
// run, 5072 spans), decoded by the receiver's protobuf decoder with fresh
// trace and span ids per copy, into a store at a steady rate, as the
// receivers submit what they decode.
type flood struct {
	body []byte
	offs []int // where ids lie in body
	per  int   // spans a copy
	st   *model.Store
	pool sync.Pool
	sent atomic.Int64 // copies submitted
	// traces maps each copy's trace ids to the copy and when the store
	// accepted it, for the list's visibility.
	mu       sync.Mutex
	traces   map[model.TraceID]int
	accepted []time.Time
}

func newFlood(tb testing.TB, st *model.Store) *flood {
	tb.Helper()
	body := testfile.Gunzip(tb, "../receiver/testdata/req-realgym-run-5072.bin.gz")
	f := &flood{body: body, st: st, traces: map[model.TraceID]int{}}
	f.pool.New = func() any { return model.NewLocal(st.Interner()) }
	probe, _, err := receiver.DecodeProto(model.NewLocal(model.NewInterner()), body, receiver.Limits{})
	if err != nil {
		tb.Fatal(err)
	}
	f.per = len(probe.Spans)
	// Every id's bytes, wherever they lie (trace, span and parent ids).
	seen := map[string]bool{}
	for i := range probe.Spans {
		for _, id := range [][]byte{probe.Traces[i][:], probe.Spans[i].SpanID[:]} {
			if seen[string(id)] {
				continue
			}
			seen[string(id)] = true
			for at := 0; ; {
				j := bytes.Index(body[at:], id)
				if j < 0 {
					break
				}
				f.offs = append(f.offs, at+j)
				at += j + len(id)
			}
		}
	}
	slices.Sort(f.offs)
	return f
}

// send decodes and submits copy k.
func (f *flood) send(tb testing.TB, buf []byte, k int) {
	copy(buf, f.body)
	key := uint64(k)*0x9E3779B97F4A7C15 + 1
	for _, o := range f.offs {
		binary.LittleEndian.PutUint64(buf[o:], binary.LittleEndian.Uint64(buf[o:])^key)
	}
	l := f.pool.Get().(*model.Local)
	batch, _, err := receiver.DecodeProto(l, buf, receiver.Limits{})
	f.pool.Put(l)
	if err != nil {
		tb.Error(err)
		return
	}
	f.mu.Lock()
	for i := range batch.Spans {
		f.traces[batch.Traces[i]] = k
	}
	f.mu.Unlock()
	if err := f.st.SubmitWait(batch, 10*time.Second); err != nil {
		tb.Error(err)
		return
	}
	f.mu.Lock()
	for len(f.accepted) <= k {
		f.accepted = append(f.accepted, time.Time{})
	}
	f.accepted[k] = time.Now()
	f.mu.Unlock()
	f.sent.Add(1)
}

// fill submits n copies as fast as the store takes them.
func (f *flood) fill(tb testing.TB, n int) {
	buf := make([]byte, len(f.body))
	for k := 0; k < n; k++ {
		f.send(tb, buf, k)
	}
	f.st.Sync()
}

// run submits copies from copy from on at rate spans/s until stop closes.
func (f *flood) run(tb testing.TB, from, rate int, stop <-chan struct{}, done *sync.WaitGroup) {
	defer done.Done()
	buf := make([]byte, len(f.body))
	every := time.Duration(float64(time.Second) * float64(f.per) / float64(rate))
	t0 := time.Now()
	for i := 0; ; i++ {
		if d := time.Until(t0.Add(time.Duration(i) * every)); d > 0 {
			select {
			case <-stop:
				return
			case <-time.After(d):
			}
		}
		select {
		case <-stop:
			return
		default:
		}
		f.send(tb, buf, from+i)
	}
}

// keyAt is a key as the terminal delivers it, stamped on arrival.
type keyAt struct {
	km   tea.KeyMsg
	kind string
	at   time.Time
}

// loop runs the model as Bubble Tea does: one goroutine takes each message
// in turn, runs Update and then View; commands run on goroutines of their
// own and their messages queue. after, when set, sees each message's model.
type loop struct {
	msgs chan any
	quit chan struct{}
	// busy is the UI goroutine's time (Update and View) per message type.
	busy   map[string]*busyTime
	recent []handled
}

type handled struct {
	name   string
	at     time.Time
	d, cpu time.Duration
}

type busyTime struct {
	n             int
	sum, max, cpu time.Duration
}

// threadCPU is the calling thread's CPU time.
func threadCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(1, &ru) // RUSAGE_THREAD
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func newLoop() *loop {
	return &loop{msgs: make(chan any, 4096), quit: make(chan struct{}), busy: map[string]*busyTime{}}
}

// logBusy says where the UI goroutine's time went.
func (lp *loop) logBusy(b *testing.B) {
	for name, t := range lp.busy {
		fmt.Fprintf(os.Stderr, "UI goroutine: %-22s %5d messages, %8.1f ms in all (CPU %6.1f ms), max %6.1f ms\n", name, t.n, float64(t.sum)/1e6, float64(t.cpu)/1e6, float64(t.max)/1e6)
	}
}

func (lp *loop) exec(cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	go func() {
		msg := cmd()
		switch msg := msg.(type) {
		case nil, tea.QuitMsg:
		case tea.BatchMsg:
			for _, c := range msg {
				lp.exec(c)
			}
		default:
			select {
			case lp.msgs <- msg:
			case <-lp.quit:
			}
		}
	}()
}

// serve runs m until quit closes; onKey gets each key's latency (arrival
// to the View after its Update), after each message's model (a key as the
// keyAt it came in).
func (lp *loop) serve(m Model, onKey func(kind string, d time.Duration), after func(Model, any)) Model {
	// On a thread of its own, the UI goroutine's CPU can be told from the
	// wall time it waited for a core.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	lp.exec(m.Init())
	for {
		var msg any
		select {
		case <-lp.quit:
			return m
		case msg = <-lp.msgs:
		}
		var k *keyAt
		orig := msg
		if ka, ok := msg.(keyAt); ok {
			k, msg = &ka, ka.km
		}
		t0, c0 := time.Now(), threadCPU()
		next, cmd := m.Update(msg)
		m = next.(Model)
		_ = m.View()
		d, cpu := time.Since(t0), threadCPU()-c0
		name := fmt.Sprintf("%T", msg)
		if k != nil {
			name = "key " + k.kind
		}
		bt := lp.busy[name]
		if bt == nil {
			bt = &busyTime{}
			lp.busy[name] = bt
		}
		bt.n++
		bt.sum += d
		bt.cpu += cpu
		bt.max = max(bt.max, d)
		lp.recent = append(lp.recent, handled{name, t0, d, cpu})
		if k != nil {
			lat := time.Since(k.at)
			onKey(k.kind, lat)
			if *liveSlow > 0 && lat > *liveSlow {
				// What the key waited behind: the messages handled since it came.
				fmt.Fprintf(os.Stderr, "slow key %q (%s) %.1f ms:", k.km.String(), k.kind, float64(lat)/1e6)
				for _, h := range lp.recent {
					if h.at.After(k.at.Add(-200 * time.Millisecond)) {
						fmt.Fprintf(os.Stderr, " %s@%+.0f:%.1f(cpu %.1f)", h.name, float64(h.at.Sub(k.at))/1e6, float64(h.d)/1e6, float64(h.cpu)/1e6)
					}
				}
				fmt.Fprintln(os.Stderr)
			}
		}
		if len(lp.recent) > 64 {
			lp.recent = append(lp.recent[:0], lp.recent[32:]...)
		}
		if after != nil {
			after(m, orig)
		}
		lp.exec(cmd)
	}
}

// liveStore is a store as serve runs it, bounded at maxSpans.
func liveStore(b *testing.B, maxSpans int) *model.Store {
	st := model.NewStore(model.Options{MaxSpans: maxSpans, LeanGC: true})
	b.Cleanup(st.Close)
	return st
}

func liveModel(st *model.Store) Model {
	v, _ := groups.DetectVariant(st.Snapshot())
	reg := v.Registry()
	m := New(Options{Source: st, Registry: reg, Current: reg.Resolve("").Set, Live: true,
		Addrs: []string{"grpc 127.0.0.1:4317"}, Title: "gymtrace serve",
		SnippetPath: os.DevNull})
	return m
}

// latencies collects per kind.
type latencies map[string][]time.Duration

func (l latencies) report(b *testing.B, prefix string) {
	kinds := make([]string, 0, len(l))
	for k := range l {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	for _, k := range kinds {
		ds := l[k]
		slices.Sort(ds)
		p := func(q float64) float64 { return float64(ds[min(len(ds)-1, int(q*float64(len(ds))))]) / 1e6 }
		b.ReportMetric(float64(ds[len(ds)-1])/1e6, prefix+k+"-max-ms")
		b.ReportMetric(p(0.99), prefix+k+"-p99-ms")
		b.ReportMetric(p(0.5), prefix+k+"-p50-ms")
		fmt.Fprintf(os.Stderr, "%s%s: %d, p50 %.1f ms, p99 %.1f ms, max %.1f ms\n", prefix, k, len(ds), p(0.5), p(0.99), float64(ds[len(ds)-1])/1e6)
	}
}

// keyScript is what a user does, over and over: move, sort, filter, turn
// the tree's preview on and off, go to the span groups and toggle one.
// Focus starts and ends on the rollout list.
var keyScript = []struct{ key, kind string }{
	{"j", "jk"}, {"j", "jk"}, {"k", "jk"}, {"j", "jk"},
	{"s", "sort"},
	{"/", "search"}, {"e", "search"}, {"r", "search"}, {"r", "search"}, {"esc", "search"},
	{"p", "preview"}, {"p", "preview"},
	{"tab", "tab"}, {"j", "jk"}, {"k", "jk"}, {"tab", "tab"},
	{" ", "toggle"}, {"j", "jk"}, {" ", "toggle"}, {"k", "jk"},
	{"tab", "tab"},
}

// BenchmarkLiveKeys is budget 2: every key shows its effect within 250 ms
// while 200k spans/s (-live-rate) of the real Gym run arrive into a store
// as serve bounds it (2M spans), filled with 1M spans first. A key comes
// every 100 ms; its latency is from its arrival to the View after its
// Update, waits behind other messages included.
func BenchmarkLiveKeys(b *testing.B) {
	for b.Loop() {
		st := liveStore(b, 2_000_000)
		f := newFlood(b, st)
		f.fill(b, 1_000_000/f.per)
		m := liveModel(st)
		lp := newLoop()
		lat := latencies{}
		var mu sync.Mutex
		var served sync.WaitGroup
		served.Add(1)
		go func() {
			defer served.Done()
			m = lp.serve(m, func(kind string, d time.Duration) {
				mu.Lock()
				lat[kind] = append(lat[kind], d)
				mu.Unlock()
			}, nil)
		}()
		lp.msgs <- tea.WindowSizeMsg{Width: 160, Height: 45}
		time.Sleep(time.Second) // the first analysis of 1M spans
		stop := make(chan struct{})
		var fed sync.WaitGroup
		fed.Add(1)
		sent0 := f.sent.Load()
		t0 := time.Now()
		go f.run(b, int(sent0), *liveRate, stop, &fed)
		for i := 0; time.Since(t0) < *liveDur; i++ {
			k := keyScript[i%len(keyScript)]
			lp.msgs <- keyAt{km: keyMsg(k.key), kind: k.kind, at: time.Now()}
			time.Sleep(100 * time.Millisecond)
		}
		close(stop)
		fed.Wait()
		wall := time.Since(t0)
		close(lp.quit)
		served.Wait()
		lat.report(b, "")
		lp.logBusy(b)
		b.ReportMetric(float64(f.sent.Load()-sent0)*float64(f.per)/wall.Seconds(), "spans/s")
		b.ReportMetric(float64(len(m.rollouts.rows)), "rows")
		runtime.GC()
	}
}

// BenchmarkLiveVisible is budget 3: a batch with new rollouts shows in the
// rollout list within 1 s of the store accepting it, at about 10k
// rollouts held (the store bounded to keep that many of the real run's),
// while batches arrive at -live-rate spans/s. Visible means the list's
// rows (after the publication and the analysis it follows) hold the
// copy's rollouts.
func BenchmarkLiveVisible(b *testing.B) {
	for _, rate := range []int{20_000, *liveRate} {
		b.Run(fmt.Sprintf("rate=%d", rate), func(b *testing.B) {
			for b.Loop() {
				liveVisible(b, rate)
			}
		})
	}
}

func liveVisible(b *testing.B, rate int) {
	// The run's 5072 spans are 100 rollouts: 10k rollouts are 100 copies.
	const copies = 100
	probe := newFlood(b, model.NewStore(model.Options{}))
	st := liveStore(b, copies*probe.per)
	probe.st.Close()
	f := newFlood(b, st)
	f.fill(b, copies)
	m := liveModel(st)
	lp := newLoop()
	var vis []time.Duration
	var held []int
	seen := -1
	var served sync.WaitGroup
	served.Add(1)
	go func() {
		defer served.Done()
		m = lp.serve(m, func(string, time.Duration) {}, func(m Model, msg any) {
			if _, ok := msg.(analysisMsg); !ok {
				return
			}
			now := time.Now()
			newest := -1
			f.mu.Lock()
			for _, r := range m.rollouts.rows {
				if isApart(r.ID) || len(r.Fragments) == 0 || len(r.Fragments[0].Spans) == 0 {
					continue
				}
				if k, ok := f.traces[r.Fragments[0].TraceID]; ok && k > newest {
					newest = k
				}
			}
			for k := seen + 1; k <= newest && k < len(f.accepted); k++ {
				if k >= copies && !f.accepted[k].IsZero() {
					vis = append(vis, now.Sub(f.accepted[k]))
				}
			}
			f.mu.Unlock()
			if newest > seen {
				seen = newest
				held = append(held, len(m.rollouts.rows))
			}
		})
	}()
	lp.msgs <- tea.WindowSizeMsg{Width: 160, Height: 45}
	time.Sleep(time.Second)
	stop := make(chan struct{})
	var fed sync.WaitGroup
	fed.Add(1)
	go f.run(b, copies, rate, stop, &fed)
	time.Sleep(*liveDur)
	close(stop)
	fed.Wait()
	time.Sleep(2 * time.Second) // the last copies' analysis
	close(lp.quit)
	served.Wait()
	lp.logBusy(b)
	sent := int(f.sent.Load()) - copies
	if len(vis) == 0 {
		b.Fatalf("none of %d copies became visible", sent)
	}
	if len(vis) < sent*9/10 {
		b.Errorf("only %d of %d copies became visible", len(vis), sent)
	}
	slices.Sort(vis)
	slices.Sort(held)
	b.ReportMetric(float64(vis[len(vis)-1])/1e6, "visible-max-ms")
	b.ReportMetric(float64(vis[len(vis)/2])/1e6, "visible-p50-ms")
	b.ReportMetric(float64(held[len(held)/2]), "rows-held")
	b.Logf("rate %d: %d of %d copies seen; visible p50 %v max %v; rows %d..%d", rate, len(vis), sent,
		vis[len(vis)/2], vis[len(vis)-1], held[0], held[len(held)-1])
}
