package receiver

import (
	"context"
	"testing"
	"time"
)

// TestMemBudget checks the bound's rules: growth waits for room, a request
// alone may take the whole budget (and no more), measured memory is
// counted even past the bound and holds others back until released.
func TestMemBudget(t *testing.T) {
	b := newMemBudget(10 << 20)
	quick := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.Background(), 20*time.Millisecond)
	}
	a := &reservation{b: b, wait: time.Second}
	if !a.growTo(context.Background(), 6<<20) || b.inUse() != 6<<20 {
		t.Fatalf("first reservation: in use %d", b.inUse())
	}
	c := &reservation{b: b, wait: 20 * time.Millisecond}
	ctx, cancel := quick()
	if c.growTo(ctx, 6<<20) {
		t.Fatal("a second 6 MiB fit in a 10 MiB budget holding 6 MiB")
	}
	cancel()
	if c.held != 0 || b.inUse() != 6<<20 {
		t.Fatalf("a refused growth left %d held, %d in use", c.held, b.inUse())
	}
	// It gets the room once the first lets go.
	done := make(chan bool, 1)
	c.wait = time.Second
	go func() { done <- c.growTo(context.Background(), 6<<20) }()
	time.Sleep(10 * time.Millisecond)
	a.release()
	if !<-done || b.inUse() != 6<<20 {
		t.Fatalf("growth after a release: in use %d", b.inUse())
	}
	c.release()
	// Alone, a request larger than the budget takes all of it.
	big := &reservation{b: b, wait: time.Second}
	if !big.growTo(context.Background(), 50<<20) || big.held != 10<<20 {
		t.Fatalf("alone, 50 MiB took %d of a 10 MiB budget", big.held)
	}
	// What it measures is counted, past the bound, and blocks others.
	big.setTo(30 << 20)
	other := &reservation{b: b, wait: 20 * time.Millisecond}
	if other.growTo(context.Background(), 1<<20) {
		t.Fatal("room given while the budget is over its bound")
	}
	big.release()
	if b.inUse() != 0 || !other.growTo(context.Background(), 1<<20) {
		t.Fatalf("after release: in use %d", b.inUse())
	}
	other.release()
}
