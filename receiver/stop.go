package receiver

import (
	"net/http"
	"sync"
	"time"
)

// bodyReads are the HTTP request bodies being read. A stop cuts them off
// once its grace period ends: a client that declared a body and stalls
// would otherwise hold the stop for the whole body timeout.
type bodyReads struct {
	mu   sync.Mutex
	next int
	live map[int]*http.ResponseController
	cuts map[int]bool
	// stopped is set by cut: reads that begin after it are cut at once.
	stopped bool
}

// add registers a body read; done must follow.
func (b *bodyReads) add(rc *http.ResponseController) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.live == nil {
		b.live, b.cuts = map[int]*http.ResponseController{}, map[int]bool{}
	}
	b.next++
	b.live[b.next] = rc
	if b.stopped {
		_ = rc.SetReadDeadline(time.Now())
		b.cuts[b.next] = true
	}
	return b.next
}

// done ends a body read and reports whether a stop cut it off.
func (b *bodyReads) done(id int) (cut bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	cut = b.cuts[id]
	delete(b.live, id)
	delete(b.cuts, id)
	return cut
}

// cut ends every body read now: their reads fail at once.
func (b *bodyReads) cut() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stopped = true
	for id, rc := range b.live {
		_ = rc.SetReadDeadline(time.Now())
		b.cuts[id] = true
	}
}
