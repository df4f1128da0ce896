package whatif_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gate/whatif"
	"github.com/nemo-gym/gymtrace/model"
	"github.com/nemo-gym/gymtrace/receiver"
)

// TestContextLeaksEndLive: the simulated fleet's 40 rollouts with context
// leaks (`demo --context-leak 0.05`, recorded as the TUI received them:
// one line an export request), fed request by request to one engine kept
// across the snapshots, as the live faces check them. A leaked request span
// no call was matched to hangs under the request before it, which has
// arrived: once every request is in, no rollout is in flight, none misses a
// parent, and the run has ended, as a fresh engine counts it, though the
// store published since for other signals.
func TestContextLeaksEndLive(t *testing.T) {
	lines := recordLines(t, filepath.Join("testdata", "demo-context-leak.otlp.jsonl.gz"))
	clock := time.Unix(1_800_000_000, 0)
	st := model.NewStore(model.Options{Now: func() time.Time { return clock }})
	t.Cleanup(st.Close)
	eng := whatif.NewEngine(groups.Default())
	for i, l := range lines {
		clock = clock.Add(100 * time.Millisecond)
		if _, err := receiver.ReadFiles(st, []string{"-"}, receiver.ReadOptions{Stdin: bytes.NewReader(l)}); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		st.Sync()
		eng.Check(st.Snapshot(), clock, whatif.LiveGrace)
	}
	// Past the grace and the quiet the store publishes again with no new
	// span, as it does for the metric points a fleet keeps exporting; a
	// live face checks that snapshot at once.
	clock = clock.Add(whatif.LiveGrace + whatif.JobQuiet)
	st.Sync()
	snap := st.Snapshot()
	now := clock.Add(time.Second)
	rep := eng.Check(snap, now, whatif.LiveGrace)
	got := rep.Tally(now, whatif.JobQuiet)

	// What the capture is about: leaks, some of them a fragment of their own.
	stc := rep.Structure
	leaked, apart := stc.LeakedSpans(), 0
	for _, r := range stc.Snap.Rollouts {
		for _, f := range r.Fragments {
			if leaked[f.Spans[0].SpanID] {
				apart++
			}
		}
	}
	if len(leaked) == 0 || apart == 0 {
		t.Fatalf("%d leaks, %d of them a fragment of their own: the capture no longer shows what the test is about", len(leaked), apart)
	}
	if got.Rollouts != 40 || got.InFlight != 0 || got.Pending != 0 || got.Joined != got.Rollouts || got.Job != whatif.JobEnded {
		t.Errorf("all in: %d rollouts, %d in flight, %d pending, %d joined, job %v; want 40, none in flight or pending, all joined, job ended",
			got.Rollouts, got.InFlight, got.Pending, got.Joined, got.Job)
	}
	for _, h := range rep.Hops {
		if h.Cause == whatif.CauseParentMissing {
			t.Errorf("hop %+v: every span's parent is in the capture", h)
		}
	}
	for id, rc := range rep.ByRollout {
		if rc.InFlight {
			t.Errorf("rollout %s in flight", id)
		}
	}
	fresh := whatif.NewEngine(groups.Default()).Check(snap, now, whatif.LiveGrace).Tally(now, whatif.JobQuiet)
	if !reflect.DeepEqual(got, fresh) {
		t.Errorf("live tally %+v, a fresh engine's %+v", got, fresh)
	}
	t.Logf("%d leaks, %d a fragment of their own; %+v", len(leaked), apart, got)
}

// recordLines reads a gzipped record (`--record`): one export request a line.
func recordLines(t *testing.T, path string) [][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(zr)
	sc.Buffer(nil, 1<<26)
	var lines [][]byte
	for sc.Scan() {
		lines = append(lines, append([]byte(nil), sc.Bytes()...))
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(lines) < 10 {
		t.Fatalf("%s: %d requests, want the run in pieces", path, len(lines))
	}
	return lines
}
