package main

import (
	"context"
	"testing"
	"time"

	"github.com/nemo-gym/gymtrace/gate/whatif"
	"github.com/nemo-gym/gymtrace/model"
)

// TestTallyCountsABurstOnceQuiet: the live tally paces its checks by their
// cost while spans arrive, but a burst is counted once a tick passes with
// nothing new, however long the pace would have it wait.
func TestTallyCountsABurstOnceQuiet(t *testing.T) {
	st := model.NewStore(model.Options{LeanGC: true})
	defer st.Close()
	bodies := yardstickBodies(t, "req-realgym-run-5072.bin.gz", 3*5072)
	store := storeAdder(t, st)
	add := func(body []byte) {
		store(body)
		st.Sync()
	}
	tl := newTallier(nil)
	tl.share = 1 << 40 // paced, a second check would wait for hours
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	waitTallied := func(want int, within time.Duration) {
		t.Helper()
		deadline := time.Now().Add(within)
		for tl.live().Spans != want {
			if time.Now().After(deadline) {
				t.Fatalf("after %v the live tally counts %d spans, want %d (the store holds %d)", within, tl.live().Spans, want, st.Snapshot().Stats.Stored)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	add(bodies[0])
	first := st.Snapshot().Stats.Stored
	defer tl.watch(ctx, st)()
	waitTallied(first, 3*time.Second) // the first check runs at once
	for _, b := range bodies[1:] {
		add(b)
	}
	all := st.Snapshot().Stats.Stored
	if all <= first {
		t.Fatalf("the burst stored nothing: %d spans, %d before", all, first)
	}
	// The tick that sees the burst, then a tick that sees nothing new.
	waitTallied(all, 4*time.Second)
	if got := tl.live(); got.Rollouts == 0 || got.Rollouts != got.Joined+got.Split+got.Pending {
		t.Errorf("the tally of the burst counts %d rollouts as %d joined, %d split, %d pending", got.Rollouts, got.Joined, got.Split, got.Pending)
	}
}

// TestTallyJudgesPendingOnceTheirGracePasses: rollouts too fresh to judge
// at the last check are judged once their grace window has passed, with
// no new span to prompt a check.
func TestTallyJudgesPendingOnceTheirGracePasses(t *testing.T) {
	st := model.NewStore(model.Options{LeanGC: true})
	defer st.Close()
	add := storeAdder(t, st)
	for _, body := range yardstickBodies(t, "req-realgym-run-5072.bin.gz", 5072) {
		add(body)
	}
	st.Sync()
	tl := newTallier(nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	defer tl.watch(ctx, st)()
	deadline := time.Now().Add(3 * time.Second)
	for tl.live().Spans == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no live tally after 3s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	first := tl.live()
	if first.Pending == 0 || first.Pending != first.Rollouts {
		t.Fatalf("spans that just arrived: %d of %d rollouts pending, want all", first.Pending, first.Rollouts)
	}
	deadline = time.Now().Add(whatif.LiveGrace + 4*time.Second)
	for tl.live().Pending > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%v after the spans, %d rollouts still pending", whatif.LiveGrace+4*time.Second, tl.live().Pending)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := tl.live(); got.Joined+got.Split != first.Rollouts {
		t.Errorf("judged %d joined and %d split of %d rollouts", got.Joined, got.Split, first.Rollouts)
	}
}
