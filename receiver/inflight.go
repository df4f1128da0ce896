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

// memBudget bounds the bytes held by requests in flight. Requests that do
// not fit wait in turn; the first in line may go past the bound when it
// cannot fit (one at a time), so a request larger than what the others
// leave still gets through, and two half-read requests never wait on each
// other for ever. The bound is thus exceeded by one request at most.
type memBudget struct {
	mu      sync.Mutex
	cap     int64
	used    int64
	wake    chan struct{} // closed and replaced whenever room or the line changes
	next    uint64        // the last ticket handed out
	waiting map[uint64]bool
	over    *reservation // the one reservation allowed past the bound
}

func newMemBudget(bytes int64) *memBudget {
	return &memBudget{cap: max(bytes, 1<<20), wake: make(chan struct{}), waiting: map[uint64]bool{}}
}

// inUse returns the bytes held now.
func (b *memBudget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// take makes r hold want bytes, waiting until the growth fits, or r is
// first in line and nobody else is past the bound, or ctx ends (false: r
// is unchanged).
func (b *memBudget) take(ctx context.Context, r *reservation, want int64) bool {
	var ticket uint64
	for {
		b.mu.Lock()
		if want <= r.held {
			b.setLocked(r, want)
			b.mu.Unlock()
			return true
		}
		extra := want - r.held
		first := len(b.waiting) == 0 || ticket != 0 && ticket == b.firstLocked()
		if b.used+extra <= b.cap || b.over == r || b.over == nil && first {
			if b.used+extra > b.cap {
				b.over = r
			}
			b.used += extra
			r.held = want
			if ticket != 0 {
				delete(b.waiting, ticket)
				b.broadcast() // the line moved
			}
			b.mu.Unlock()
			return true
		}
		if ticket == 0 {
			b.next++
			ticket = b.next
			b.waiting[ticket] = true
		}
		wake := b.wake
		b.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			b.mu.Lock()
			delete(b.waiting, ticket)
			b.broadcast()
			b.mu.Unlock()
			return false
		}
	}
}

func (b *memBudget) firstLocked() uint64 {
	first := uint64(0)
	for t := range b.waiting {
		if first == 0 || t < first {
			first = t
		}
	}
	return first
}

// set makes r hold want bytes at once: memory already taken is counted,
// even past the bound, and holds others back until released.
func (b *memBudget) set(r *reservation, want int64) {
	b.mu.Lock()
	b.setLocked(r, want)
	b.mu.Unlock()
}

func (b *memBudget) setLocked(r *reservation, want int64) {
	b.used += want - r.held
	shrunk := want < r.held
	r.held = want
	if b.over == r && (want == 0 || b.used <= b.cap) {
		b.over = nil
	}
	if shrunk {
		b.broadcast()
	}
}

func (b *memBudget) broadcast() {
	close(b.wake)
	b.wake = make(chan struct{})
}

// reservation is one request's share of a memBudget. One goroutine uses it.
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
	return r.b.take(ctx, r, n)
}

// setTo makes the reservation hold n bytes at once: what the request
// measures it holds.
func (r *reservation) setTo(n int64) { r.b.set(r, n) }

// release gives everything back.
func (r *reservation) release() {
	if r.held != 0 {
		r.setTo(0)
	}
}
