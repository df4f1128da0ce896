package model

import "time"

// SubmitWait is Submit that, when the queue is full, waits up to wait for
// room before it returns ErrFull. A short wait turns a burst the writer
// absorbs in a moment into backpressure on the sender instead of a refused
// request: senders keep a bounded number of requests in flight, so they
// slow down to what the store can take.
func (s *Store) SubmitWait(b Batch, wait time.Duration) error {
	if err := b.check(); err != nil {
		return err
	}
	// Receivers call this from many goroutines: what the batch alone
	// tells is worked out here, on the caller's core, not by the writer.
	p := prepPool.Get().(*batchPrep)
	laid := Batch{Spans: p.prepare(b.Spans, b.Traces, b.Parents, s.strs, &s.keys), prep: p, pooled: true}
	if err := s.submitWait(laid, wait); err != nil {
		p.release() // b is as it was: the caller may submit it again
		return err
	}
	b.recycle()
	return nil
}

func (s *Store) submitWait(b Batch, wait time.Duration) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	select {
	case s.in <- item{batch: b}:
		s.accepted.Add(int64(len(b.Spans)))
		return nil
	default:
	}
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case s.in <- item{batch: b}:
			s.accepted.Add(int64(len(b.Spans)))
			return nil
		case <-t.C:
		}
	}
	s.refused.Add(int64(len(b.Spans)))
	return ErrFull
}
