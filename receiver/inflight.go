package receiver

import (
	"context"
	"sync"
	"time"
)

// Defaults for the bounds on requests in flight.
const (
	// DefaultBodyTimeout bounds reading one request body: a sender that
	// declares a body and sends it slowly, or never, holds a connection and
	// what it sent for at most this long.
	DefaultBodyTimeout = 30 * time.Second
	// DefaultMaxInflight bounds the memory of the requests being handled
	// at once (bodies, inflated bodies, decoded spans, record lines).
	DefaultMaxInflight = 4 * DefaultMaxRecvBytes
	// DefaultMemoryWait is how long a request waits for room in that
	// bound before it is refused as retryable.
	DefaultMemoryWait = 5 * time.Second
	// initialBody is the most room grown for a body before its bytes
	// arrive, whatever Content-Length says.
	initialBody = 64 << 10
	// handlingFactor is what handling a request costs in memory, as a
	// multiple of its (decompressed) size, before the costs are known:
	// the body, the spans decoded from it (about its size) and its record
	// lines (OTLP/JSON, one to two times its size). Once decoded, the
	// request holds what it measures instead.
	handlingFactor = 3
)

// memBudget bounds the bytes held by requests in flight. A request larger
// than the whole budget takes all of it, and so runs alone.
type memBudget struct {
	mu   sync.Mutex
	cap  int64
	used int64
	wake chan struct{} // closed and replaced whenever bytes are released
}

func newMemBudget(bytes int64) *memBudget {
	return &memBudget{cap: max(bytes, 1<<20), wake: make(chan struct{})}
}

// full reports whether the budget has no room left.
func (b *memBudget) full() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used >= b.cap
}

// inUse returns the bytes held now.
func (b *memBudget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// take moves a reservation from held to want bytes (at most the budget),
// waiting until the growth fits, or only this reservation holds anything,
// or ctx ends (false: the reservation is unchanged).
func (b *memBudget) take(ctx context.Context, held, want int64) (int64, bool) {
	want = min(want, b.cap)
	for {
		b.mu.Lock()
		if want <= held {
			b.used -= held - want
			b.broadcast()
			b.mu.Unlock()
			return want, true
		}
		if b.used+want-held <= b.cap || b.used == held {
			b.used += want - held
			b.mu.Unlock()
			return want, true
		}
		wake := b.wake
		b.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return held, false
		}
	}
}

// force moves a reservation to want bytes at once: the memory is already
// taken, so it is counted, even past the budget, and holds others back.
func (b *memBudget) force(held, want int64) int64 {
	b.mu.Lock()
	b.used += want - held
	if want < held {
		b.broadcast()
	}
	b.mu.Unlock()
	return want
}

func (b *memBudget) broadcast() {
	close(b.wake)
	b.wake = make(chan struct{})
}

// reservation is one request's share of a memBudget.
type reservation struct {
	b    *memBudget
	held int64
	wait time.Duration
}

// growTo waits (up to r.wait, or until ctx ends) for the reservation to
// hold n bytes; false means it could not.
func (r *reservation) growTo(ctx context.Context, n int64) bool {
	if n <= r.held {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, r.wait)
	defer cancel()
	var ok bool
	r.held, ok = r.b.take(ctx, r.held, n)
	return ok
}

// setTo makes the reservation hold n bytes at once: what the request
// measures it holds.
func (r *reservation) setTo(n int64) { r.held = r.b.force(r.held, n) }

// release gives everything back.
func (r *reservation) release() {
	if r.held != 0 {
		r.setTo(0)
	}
}
