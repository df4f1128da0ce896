package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"flag"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/nemo-gym/gymtrace/internal/cputime"
	"github.com/nemo-gym/gymtrace/internal/testfile"
	"github.com/nemo-gym/gymtrace/receiver"
	"github.com/nemo-gym/gymtrace/tui"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

var firstScreenCapture = flag.String("first-screen-capture", "",
	"BenchmarkOpenFirstScreen opens this capture instead of the 1M-span record it writes")

// yardstickCopies calls each with copies of a request of the yardstick
// (receiver/testdata/NAME, gzipped or not), fresh trace and span ids in
// each, until spans spans were given; it returns how many were.
func yardstickCopies(tb testing.TB, name string, spans int, each func(*coltrace.ExportTraceServiceRequest)) int {
	tb.Helper()
	path := "../../receiver/testdata/" + name
	var body []byte
	if strings.HasSuffix(name, ".gz") {
		body = testfile.Gunzip(tb, path)
	} else {
		var err error
		if body, err = os.ReadFile(path); err != nil {
			tb.Fatal(err)
		}
	}
	var req coltrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(body, &req); err != nil {
		tb.Fatal(err)
	}
	var ids [][]byte
	per := 0
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, sp := range ss.Spans {
				per++
				ids = append(ids, sp.TraceId, sp.SpanId)
				if len(sp.ParentSpanId) == 8 {
					ids = append(ids, sp.ParentSpanId)
				}
			}
		}
	}
	// XOR with a key per copy; applied twice it gives the ids back.
	flip := func(k uint64) {
		k = k*0x9E3779B97F4A7C15 + 1
		for _, id := range ids {
			binary.LittleEndian.PutUint64(id, binary.LittleEndian.Uint64(id)^k)
		}
	}
	n := 0
	for k := uint64(1); n < spans; k++ {
		flip(k)
		each(&req)
		flip(k)
		n += per
	}
	return n
}

// writeRunRecord writes copies of the real Gym run's request (every request
// of a run, 5072 spans) with fresh trace and span ids per copy, as
// `serve --record` writes requests: one OTLP/JSON line each.
func writeRunRecord(tb testing.TB, path string, spans int) int {
	tb.Helper()
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var line []byte
	n := yardstickCopies(tb, "req-realgym-run-5072.bin.gz", spans, func(req *coltrace.ExportTraceServiceRequest) {
		line = append(receiver.AppendTraceRequestJSON(line[:0], req), '\n')
		if _, err := w.Write(line); err != nil {
			tb.Fatal(err)
		}
	})
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	return n
}

// firstScreen wraps the interface as the terminal runs it and quits once
// the rollout list shows the first analysis's rollouts and join figures.
type firstScreen struct {
	m     tui.Model
	ready time.Time
	view  string
}

func (f firstScreen) Init() tea.Cmd {
	size := func() tea.Msg { return tea.WindowSizeMsg{Width: 160, Height: 45} } // as a terminal sends it at start
	return tea.Batch(f.m.Init(), size)
}

func (f firstScreen) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	next, cmd := f.m.Update(msg)
	f.m = next.(tui.Model)
	if v := f.m.View(); f.ready.IsZero() && f.m.Analysed() {
		f.ready, f.view = time.Now(), v
		return f, tea.Quit
	}
	return f, cmd
}

func (f firstScreen) View() string { return f.m.View() }

// BenchmarkOpenFirstScreen is `gymtrace open FILE` up to its first full
// screen: the file read into a store and published, the variant chosen,
// the interface started as Bubble Tea runs it (its commands on their own
// goroutines), the first analysis, and the View that shows the rollout
// list with its figures. The file is a 1M-span record of the real Gym run
// (-first-screen-capture names another).
func BenchmarkOpenFirstScreen(b *testing.B) {
	path := *firstScreenCapture
	if path == "" {
		path = filepath.Join(b.TempDir(), "run-1m.jsonl")
		n := writeRunRecord(b, path, 1_000_000)
		b.Logf("wrote %d spans to %s", n, path)
	}
	var last string
	var load, first time.Duration
	defer cputime.Timer(b)()
	for b.Loop() {
		runtime.GC()
		t0 := time.Now()
		var stderr bytes.Buffer
		cfg, release, code, done := prepareOpen([]string{path}, io.Discard, &stderr, true)
		if done {
			b.Fatalf("open exited %d: %s", code, stderr.String())
		}
		loaded := time.Since(t0)
		p := tea.NewProgram(firstScreen{m: tui.New(tuiOptions(cfg))},
			tea.WithInput(nil), tea.WithOutput(io.Discard), tea.WithoutSignalHandler())
		final, err := p.Run()
		if err != nil {
			b.Fatal(err)
		}
		fs := final.(firstScreen)
		if fs.ready.IsZero() {
			b.Fatal("the interface ended before its first analysis")
		}
		load += loaded
		first += fs.ready.Sub(t0)
		last = fs.view
		release()
	}
	b.ReportMetric(load.Seconds()*1e3/float64(b.N), "load-ms")
	b.ReportMetric(first.Seconds()*1e3/float64(b.N), "first-screen-ms")
	if !strings.Contains(last, "joined") && !strings.Contains(last, "split") {
		b.Fatalf("the first screen shows no join figures:\n%s", last)
	}
	if testing.Verbose() {
		b.Logf("first screen:\n%s", last)
	}
}
