package receiver

import (
	"context"
	"sync"
	"time"
)

// Defaults for the HTTP body bounds.
const (
	// DefaultBodyTimeout bounds reading one request body: a sender that
	// declares a body and sends it slowly, or never, holds a connection and
	// what it sent for at most this long.
	DefaultBodyTimeout = 30 * time.Second
	// DefaultMaxInflight bounds the decompressed bytes of all requests
	// inflated at once: ordinary ones reserve what their size suggests,
	// those inflating further reserve MaxDecompressed, so at most two
	// bodies near the bound (bombs, mostly) are in memory at once.
	DefaultMaxInflight = 2 * DefaultMaxDecompressed
	// inflightWait is how long a compressed request waits for room before
	// it is refused as retryable.
	inflightWait = 10 * time.Second
	// initialBody is the most room reserved for a body before its bytes
	// arrive, whatever Content-Length says.
	initialBody = 64 << 10
)

// byteBudget is a counting semaphore over bytes, in MiB units.
type byteBudget struct {
	tokens chan struct{}
	acq    sync.Mutex // one acquirer gathers at a time, so two never deadlock holding halves
}

const budgetUnit = 1 << 20

func newByteBudget(bytes int64) *byteBudget {
	n := max(1, int((bytes+budgetUnit-1)/budgetUnit))
	b := &byteBudget{tokens: make(chan struct{}, n)}
	for i := 0; i < n; i++ {
		b.tokens <- struct{}{}
	}
	return b
}

// units is what a reservation of bytes takes, at most the whole budget.
func (b *byteBudget) units(bytes int64) int {
	return min(cap(b.tokens), max(1, int((bytes+budgetUnit-1)/budgetUnit)))
}

// acquire reserves bytes, waiting until ctx ends; false means it did not
// get them (nothing is held then).
func (b *byteBudget) acquire(ctx context.Context, bytes int64) bool {
	n := b.units(bytes)
	b.acq.Lock()
	defer b.acq.Unlock()
	for got := 0; got < n; got++ {
		select {
		case <-b.tokens:
		case <-ctx.Done():
			b.put(got)
			return false
		}
	}
	return true
}

func (b *byteBudget) release(bytes int64) {
	if bytes > 0 {
		b.put(b.units(bytes))
	}
}

func (b *byteBudget) put(n int) {
	for i := 0; i < n; i++ {
		b.tokens <- struct{}{}
	}
}
