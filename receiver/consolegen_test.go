package receiver

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/nemo-gym/gymtrace/internal/cputime"
	"github.com/nemo-gym/gymtrace/model"
)

var (
	consoleOut    = flag.String("console-out", "", "write a console log of -long-console-spans spans to this file, for timing `gymtrace open`")
	longConsoleN  = flag.Int("long-console-spans", 1_000_000, "spans in the long console log (TestWriteConsoleLog, BenchmarkReadFilesConsole; -short: 100000 in the benchmark)")
	consoleIDText = regexp.MustCompile(`"0x[0-9a-f]{16}"`)
)

// longConsole yields copies of the console fixture as one long NeMo Gym
// log, each copy a distinct job as a real log would hold: its own trace id,
// span ids (the first six hex digits carry the copy number, parent links
// kept) and rollout ids (the "s3-r" prefix becomes four base-36 digits).
type longConsole struct {
	tmpl                  []byte
	trace, spanIDs, rolls []int // offsets of the text to rewrite
	left, n               int
	buf                   []byte
	pos                   int
}

const consoleFixtureSpans = 341

func newLongConsole(tb testing.TB, spans int) (*longConsole, int) {
	tb.Helper()
	raw, err := os.ReadFile("testdata/all.console.jsonl")
	if err != nil {
		tb.Fatal(err)
	}
	c := &longConsole{tmpl: raw}
	c.trace = offsets(raw, []byte("243fcc768c47930834e6ed7fbc6634f7"))
	c.rolls = offsets(raw, []byte("s3-r"))
	for _, m := range consoleIDText.FindAllIndex(raw, -1) {
		c.spanIDs = append(c.spanIDs, m[0]+3) // after `"0x`
	}
	if len(c.trace) == 0 || len(c.rolls) == 0 || len(c.spanIDs) < consoleFixtureSpans {
		tb.Fatalf("fixture changed: %d trace ids, %d rollout ids, %d span ids", len(c.trace), len(c.rolls), len(c.spanIDs))
	}
	c.left = (spans + consoleFixtureSpans - 1) / consoleFixtureSpans
	return c, c.left * consoleFixtureSpans
}

func offsets(b, sub []byte) []int {
	var out []int
	for i := 0; ; {
		j := bytes.Index(b[i:], sub)
		if j < 0 {
			return out
		}
		out = append(out, i+j)
		i += j + len(sub)
	}
}

func (c *longConsole) Read(p []byte) (int, error) {
	if c.pos == len(c.buf) {
		if c.left == 0 {
			return 0, io.EOF
		}
		c.left--
		c.n++
		c.buf = append(c.buf[:0], c.tmpl...)
		tid := fmt.Appendf(nil, "%032x", c.n)
		for _, o := range c.trace {
			copy(c.buf[o:], tid)
		}
		sid := fmt.Appendf(nil, "%06x", c.n)
		for _, o := range c.spanIDs {
			copy(c.buf[o:], sid)
		}
		rid := fmt.Appendf(nil, "%4s", strconv.FormatInt(int64(c.n), 36))
		for _, o := range c.rolls {
			copy(c.buf[o:], rid)
		}
		c.pos = 0
	}
	n := copy(p, c.buf[c.pos:])
	c.pos += n
	return n, nil
}

// TestWriteConsoleLog writes the long console log, so `gymtrace open` can
// be timed on it. It does nothing unless -console-out is given; the file is
// never kept in the repository.
func TestWriteConsoleLog(t *testing.T) {
	if *consoleOut == "" {
		t.Skip("no -console-out")
	}
	stream, spans := newLongConsole(t, *longConsoleN)
	f, err := os.Create(*consoleOut)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(f, stream); err != nil {
		f.Close()
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s: %d spans", *consoleOut, spans)
}

// TestLongConsoleDistinct proves the generator's copies are distinct jobs:
// every span is stored (no id collides), each copy is its own rollouts, and
// no fragment is left waiting for a parent.
func TestLongConsoleDistinct(t *testing.T) {
	stream, spans := newLongConsole(t, 3*consoleFixtureSpans)
	st := model.NewStore(model.Options{})
	defer st.Close()
	rep, err := ReadStream(st, "gym.log", stream, ReadOptions{})
	st.Sync()
	s := st.Snapshot()
	if err != nil || rep.Spans != spans || s.Stats.Stored != spans || s.Stats.Duplicates != 0 {
		t.Fatalf("read %d spans, stored %d, %d duplicates, %v; want %d stored", rep.Spans, s.Stats.Stored, s.Stats.Duplicates, err, spans)
	}
	one := model.NewStore(model.Options{})
	defer one.Close()
	single, _ := newLongConsole(t, consoleFixtureSpans)
	if _, err := ReadStream(one, "gym.log", single, ReadOptions{}); err != nil {
		t.Fatal(err)
	}
	one.Sync()
	if got, want := s.Stats.Rollouts, 3*one.Snapshot().Stats.Rollouts; got != want {
		t.Fatalf("3 copies make %d rollouts, want %d", got, want)
	}
	if got, want := s.Stats.Fragments, 3*one.Snapshot().Stats.Fragments; got != want {
		t.Fatalf("3 copies make %d fragments, want %d", got, want)
	}
}

// BenchmarkReadFilesConsole measures `gymtrace open` on a long console log
// without the rendering: ReadFiles from a file on disk (read, parse, store,
// trees), 1M spans (-short: 100k; -long-console-spans to change).
func BenchmarkReadFilesConsole(b *testing.B) {
	n := *longConsoleN
	if testing.Short() {
		n = 100_000
	}
	stream, spans := newLongConsole(b, n)
	path := filepath.Join(b.TempDir(), "gym.log")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.Copy(f, stream); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	var elapsed time.Duration
	var cpu int64
	for b.Loop() {
		st := model.NewStore(model.Options{})
		start, c0 := time.Now(), cputime.Now()
		rep, err := ReadFiles(st, []string{path}, ReadOptions{})
		st.Sync()
		elapsed += time.Since(start)
		cpu += cputime.Now() - c0
		if err != nil || rep.Spans != spans || st.Snapshot().Stats.Stored != spans {
			b.Fatalf("read %d spans (stored %d), %v; want %d", rep.Spans, st.Snapshot().Stats.Stored, err, spans)
		}
		st.Close()
	}
	b.ReportMetric(float64(spans*b.N)/elapsed.Seconds(), "spans/s")
	b.ReportMetric(float64(cpu)/float64(spans*b.N)/1e3, "cpu-us/span")
}
