package receiver

import (
	"context"
	"testing"
	"time"
)

// TestMemBudget checks the bound's rules: growth waits for room, except
// for the first in line when nobody is past the bound (so a large request
// and two half-read ones always get through), and what is past the bound
// holds everyone else back until released.
func TestMemBudget(t *testing.T) {
	b := newMemBudget(10 << 20)
	a := &reservation{b: b, wait: time.Second}
	if !a.growTo(context.Background(), 6<<20) || b.inUse() != 6<<20 {
		t.Fatalf("first reservation: in use %d", b.inUse())
	}
	// Nobody past the bound: the next request may go past it.
	c := &reservation{b: b, wait: time.Second}
	if !c.growTo(context.Background(), 6<<20) || b.inUse() != 12<<20 {
		t.Fatalf("the first in line did not go past the bound: in use %d", b.inUse())
	}
	// Now others wait for room.
	d := &reservation{b: b, wait: 20 * time.Millisecond}
	if d.growTo(context.Background(), 1<<20) || d.held != 0 {
		t.Fatalf("room given past the bound twice: d holds %d", d.held)
	}
	done := make(chan bool, 1)
	d.wait = time.Second
	go func() { done <- d.growTo(context.Background(), 1<<20) }()
	time.Sleep(10 * time.Millisecond)
	c.release()
	if !<-done || b.inUse() != 7<<20 {
		t.Fatalf("growth after a release: in use %d", b.inUse())
	}
	a.release()
	d.release()
	// A request larger than what the others leave goes past the bound,
	// one at a time: the first in line.
	small := &reservation{b: b, wait: time.Second}
	small.growTo(context.Background(), 6<<20) // a stalled body, say
	big := &reservation{b: b, wait: time.Second}
	if !big.growTo(context.Background(), 50<<20) || big.held != 50<<20 || b.inUse() != 56<<20 {
		t.Fatalf("50 MiB next to 6 MiB in a 10 MiB budget: held %d, in use %d", big.held, b.inUse())
	}
	other := &reservation{b: b, wait: 20 * time.Millisecond}
	if other.growTo(context.Background(), 1<<20) {
		t.Fatal("room given while another request is past the bound")
	}
	// Two half-read requests that both need more do not wait on each
	// other: once the big one is done, the first in line goes on.
	small.setTo(3 << 20)
	big.setTo(6 << 20) // back within the bound: no longer past it
	got := make(chan bool, 2)
	go func() { got <- small.growTo(context.Background(), 9<<20) }()
	time.Sleep(10 * time.Millisecond)
	go func() { got <- big.growTo(context.Background(), 12<<20) }()
	if !<-got {
		t.Fatal("the first in line did not get past the bound")
	}
	if (small.held == 9<<20) == (big.held == 12<<20) {
		t.Fatalf("small %d, big %d: exactly one should have grown", small.held, big.held)
	}
	if small.held == 9<<20 {
		small.release()
	} else {
		big.release()
	}
	if !<-got {
		t.Fatal("the second did not grow once the first let go")
	}
	small.release()
	big.release()
	if b.inUse() != 0 || !other.growTo(context.Background(), 1<<20) {
		t.Fatalf("after release: in use %d", b.inUse())
	}
	other.release()
}
