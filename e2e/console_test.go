package e2e

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nemo-gym/gymtrace/gymsim"
	"github.com/nemo-gym/gymtrace/model"
	"github.com/nemo-gym/gymtrace/receiver"
)

// TestConsoleCaptureMatchesFleet: the fleet's console output (Python SDK
// lines), mixed with server log lines as real logs are, read back by the
// capture reader, gives exactly the spans the fleet emitted.
func TestConsoleCaptureMatchesFleet(t *testing.T) {
	for _, seed := range seeds(2, 5) {
		for _, spec := range []string{"all", "server,rollout,verify"} {
			t.Run(fmt.Sprintf("seed=%d/spec=%s", seed, spec), func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				var out bytes.Buffer
				f, err := gymsim.Start(ctx, gymsim.Config{Seed: seed, Spec: spec, Rollouts: rolloutsPerRun,
					Protocol: "console", Console: &out, RecordTruth: true})
				if err != nil {
					t.Fatal(err)
				}
				f.Wait()
				if err := f.Shutdown(ctx); err != nil {
					t.Fatal(err)
				}
				truth := f.Truth()

				// Interleave what a uvicorn process prints between spans.
				var mixed bytes.Buffer
				noise := 0
				for i, line := range bytes.SplitAfter(out.Bytes(), []byte("\n")) {
					if i%40 == 7 {
						fmt.Fprintf(&mixed, "INFO:     127.0.0.1:%d - \"POST /run HTTP/1.1\" 200 OK\n", 40000+i)
						noise++
					}
					mixed.Write(line)
				}

				st := model.NewStore(model.Options{})
				defer st.Close()
				rep, err := receiver.ReadStream(st, "fleet.console.jsonl", &mixed, receiver.ReadOptions{})
				if err != nil {
					t.Fatal(err)
				}
				st.Sync()
				if rep.Spans != len(truth) || rep.Skipped != noise || rep.BadLines != 0 {
					t.Fatalf("read %d spans, skipped %d, bad %d; fleet emitted %d, noise lines %d (bad: %v)",
						rep.Spans, rep.Skipped, rep.BadLines, len(truth), noise, rep.BadSamples)
				}
				got := storedSpans(st.Snapshot())
				bad := 0
				for _, ts := range truth {
					want := truthSpan(ts)
					if g, ok := got[ts.SpanID.String()]; !ok || g != want {
						if bad++; bad <= 5 {
							t.Errorf("span %s:\n  read %v (present=%v)\n  sent %v", ts.SpanID, g, ok, want)
						}
					}
				}
			})
		}
	}
}
