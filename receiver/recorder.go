package receiver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Defaults of the record writer.
const (
	// DefaultRecordWait is how long a request waits for its lines to be
	// written before it is refused as retryable: the writer is stalled (a
	// pipe nobody reads, a hung mount). Exporters time out after 10 s.
	DefaultRecordWait = 5 * time.Second
	// recordProbeEvery is how often a failing record (a full disk) tries to
	// write again; between tries requests are refused at once.
	recordProbeEvery = time.Second
	// recordChunk is the most the writer gathers before a write call.
	recordChunk = 1 << 20
)

// Errors a record write answers a request with; all are retryable.
var (
	errRecordStalled = errors.New("the record writer is stalled (a full pipe or a hung disk)")
	errRecordClosed  = errors.New("the record is closed")
)

// recordError is a failed write: the sender is asked to retry, and the
// record tries again.
type recordError struct{ err error }

func (e *recordError) Error() string { return "write record: " + RecordCause(e.err) }
func (e *recordError) Unwrap() error { return e.err }

// RecordOptions configure a Recorder.
type RecordOptions struct {
	// Fsync syncs the file to its device before a request is acknowledged,
	// so an acknowledged span survives a power loss, not only the process
	// being killed.
	Fsync bool
	// Wait bounds how long a request waits for its lines to be written
	// (DefaultRecordWait when zero).
	Wait time.Duration
}

// Recorder appends accepted requests to a file as OTLP/JSON lines (one
// export request per line, hex ids, 64-bit integers as strings), the format
// the file readers load. A request is acknowledged only once its lines are
// written (handed to the operating system, which keeps them when the
// process is killed) and, with Fsync, synced: one goroutine writes whatever
// requests are waiting in one go, so a sync serves them all.
//
// A write that fails (a full disk) is cut off the file again, so the file
// ends with a whole line, and the requests it held are refused as
// retryable; the record tries again at most every second and resumes by
// itself when the write succeeds. A writer that does not return (a FIFO
// nobody reads) makes the requests waiting on it time out, refused too.
//
// write, admit and the counters may be called from any goroutine; Close
// once.
type Recorder struct {
	w       io.Writer
	file    *os.File // set when the Recorder owns a file
	regular bool     // file is a regular file: a failed write can be cut off
	size    int64    // bytes of whole lines in the file: where a failed write is cut back to
	ragged  bool     // the file may end inside a line: the next write starts a new one
	fsync   bool
	wait    time.Duration

	mu     sync.Mutex
	queue  []*recordJob
	spare  []*recordJob // the writer's empty array, swapped with queue
	closed bool
	wake   chan struct{}
	done   chan struct{}
	chunk  []byte

	written, writtenSpans atomic.Int64
	// queuedReqs/Spans wait for the writer; busyReqs/Spans are in its
	// hands (a writer blocked for good holds these).
	queuedReqs, queuedSpans atomic.Int64
	busyReqs, busySpans     atomic.Int64
	failures                atomic.Int64 // failed write attempts
	failing                 atomic.Bool
	abandoned               atomic.Bool  // Close gave up on the writer
	lastTry                 atomic.Int64 // unix nanos of the last failed attempt
	errMu                   sync.Mutex
	err                     error // the latest write error
	onChange                func()
}

// recordJob is one request's lines waiting for the writer.
type recordJob struct {
	lines []byte // whole lines, each ending in '\n'
	spans int64
	state atomic.Int32
	done  chan error // buffered: the writer never blocks on it
}

// Job states: a job is taken by the writer or cancelled by its request,
// whichever comes first.
const (
	jobQueued int32 = iota
	jobTaken
	jobCancelled
)

// NewRecorder starts a Recorder writing to w. If w has a Sync method (an
// *os.File), it is synced on Close, and with Fsync before every
// acknowledgement.
func NewRecorder(w io.Writer, opts RecordOptions) *Recorder {
	if opts.Wait <= 0 {
		opts.Wait = DefaultRecordWait
	}
	r := &Recorder{w: w, fsync: opts.Fsync, wait: opts.Wait, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go r.run()
	return r
}

// OpenRecorder opens (creating or appending to) the file at path and starts
// a Recorder on it. A last line cut short (the process was killed while
// writing it, so it was never acknowledged) is cut off; a last line that is
// whole but lacks its newline gets one.
func OpenRecorder(path string, opts RecordOptions) (*Recorder, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open record file: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("record file %s: %w", path, err)
	}
	regular := st.Mode().IsRegular()
	size := st.Size()
	if regular && size > 0 {
		if size, err = mendTail(f, size); err != nil {
			f.Close()
			return nil, fmt.Errorf("record file %s: %w", path, err)
		}
	}
	r := NewRecorder(f, opts)
	r.file, r.regular, r.size = f, regular, size
	return r, nil
}

// maxMendTail is the longest cut-off last line OpenRecorder reads to tell
// a cut record line from a whole one.
const maxMendTail = DefaultMaxLine

// mendTail makes f, of size bytes, end with a whole line and returns its
// new size.
func mendTail(f *os.File, size int64) (int64, error) {
	last := make([]byte, 1)
	if _, err := f.ReadAt(last, size-1); err != nil {
		return size, err
	}
	if last[0] == '\n' {
		return size, nil
	}
	// Find where the last line starts.
	start := int64(0)
	buf := make([]byte, 64<<10)
	for end := size; end > 0 && size-end < maxMendTail; {
		n := min(int64(len(buf)), end)
		if _, err := f.ReadAt(buf[:n], end-n); err != nil {
			return size, err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			start = end - n + int64(i) + 1
			break
		}
		end -= n
	}
	tail := make([]byte, 0, min(size-start, maxMendTail))
	if size-start <= maxMendTail {
		tail = tail[:size-start]
		if _, err := f.ReadAt(tail, start); err != nil {
			return size, err
		}
	}
	if t := bytes.TrimSpace(tail); len(t) > 0 && t[0] == '{' && !json.Valid(t) {
		// A record line cut short: never acknowledged.
		return start, f.Truncate(start)
	}
	_, err := f.Write([]byte{'\n'})
	return size + 1, err
}

// OnChange sets a function called (on the writer goroutine) when the
// record starts or stops failing. Call before the first write.
func (r *Recorder) OnChange(f func()) { r.onChange = f }

// admit refuses a request at once while the record is failing and the
// next attempt is not due, so a full disk costs no conversion.
func (r *Recorder) admit() error {
	if !r.failing.Load() {
		return nil
	}
	if time.Since(time.Unix(0, r.lastTry.Load())) >= recordProbeEvery {
		return nil
	}
	return &recordError{r.Err()}
}

// write hands lines (whole lines, each ending in '\n') of spans spans to
// the writer and waits until they are written, the write fails, or ctx or
// the wait ends (errRecordStalled). A request that was refused may still
// be written later, by a writer that was blocked; it was not acknowledged.
func (r *Recorder) write(ctx context.Context, lines []byte, spans int64) error {
	j := &recordJob{lines: lines, spans: spans, done: make(chan error, 1)}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return errRecordClosed
	}
	r.queue = append(r.queue, j)
	r.queuedReqs.Add(1)
	r.queuedSpans.Add(spans)
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
	t := time.NewTimer(r.wait)
	defer t.Stop()
	var stop error
	select {
	case err := <-j.done:
		return err
	case <-t.C:
		stop = errRecordStalled
	case <-ctx.Done():
		stop = errRecordStalled
	}
	if j.state.CompareAndSwap(jobQueued, jobCancelled) {
		r.queuedReqs.Add(-1)
		r.queuedSpans.Add(-spans)
		return stop
	}
	// The writer has it: a result may be a moment away.
	select {
	case err := <-j.done:
		return err
	default:
		return stop
	}
}

// Written returns the requests written so far.
func (r *Recorder) Written() int64 { return r.written.Load() }

// WrittenSpans returns the spans written so far.
func (r *Recorder) WrittenSpans() int64 { return r.writtenSpans.Load() }

// Unwritten returns the requests and spans waiting for the writer or in
// its hands: what a blocked writer holds. None of them is acknowledged.
func (r *Recorder) Unwritten() (requests, spans int64) {
	return r.queuedReqs.Load() + r.busyReqs.Load(), r.queuedSpans.Load() + r.busySpans.Load()
}

// Failures returns the write attempts that failed.
func (r *Recorder) Failures() int64 { return r.failures.Load() }

// Failing reports whether the latest write attempt failed.
func (r *Recorder) Failing() bool { return r.failing.Load() }

// Err returns the latest write error, if any (kept after recovery).
func (r *Recorder) Err() error {
	r.errMu.Lock()
	defer r.errMu.Unlock()
	return r.err
}

// RecordAbandonedError is a Close that gave up on a writer that did not
// return: Requests requests of Spans spans, none acknowledged, were not
// written.
type RecordAbandonedError struct{ Requests, Spans int64 }

func (e *RecordAbandonedError) Error() string {
	return fmt.Sprintf("record writer blocked: %d spans (%d requests) not written; none was acknowledged", e.Spans, e.Requests)
}

// Close refuses new writes, lets the writer finish what is waiting, then
// syncs and closes the file it owns. When ctx ends first the writer is
// given up on (RecordAbandonedError) and the file closed under it.
func (r *Recorder) Close(ctx context.Context) error {
	r.mu.Lock()
	already := r.closed
	r.closed = true
	r.mu.Unlock()
	if !already {
		select {
		case r.wake <- struct{}{}:
		default:
		}
	}
	select {
	case <-r.done:
	case <-ctx.Done():
		reqs, spans := r.Unwritten()
		r.abandoned.Store(true)
		if r.file != nil {
			r.file.Close() // unblocks a write on a pipe
		}
		return &RecordAbandonedError{Requests: reqs, Spans: spans}
	}
	var errs []error
	if s, ok := r.w.(interface{ Sync() error }); ok && !already {
		if err := s.Sync(); err != nil && !syncUnsupported(err) {
			errs = append(errs, fmt.Errorf("sync record: %w", err))
		}
	}
	if r.file != nil && !already {
		if err := r.file.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close record: %w", err))
		}
	}
	if r.failing.Load() {
		errs = append(errs, fmt.Errorf("write record: %w", r.Err()))
	}
	return errors.Join(errs...)
}

func (r *Recorder) run() {
	defer close(r.done)
	for {
		<-r.wake
		for {
			r.mu.Lock()
			jobs, closed := r.queue, r.closed
			if len(jobs) > 0 {
				// Requests queue into the spare array meanwhile.
				r.queue, r.spare = r.spare, nil
			}
			r.mu.Unlock()
			if len(jobs) == 0 {
				if closed {
					return
				}
				break
			}
			r.writeJobs(jobs)
			clear(jobs)
			r.spare = jobs[:0]
		}
	}
}

// writeJobs writes the jobs still wanted in one go and tells each how it
// went.
func (r *Recorder) writeJobs(jobs []*recordJob) {
	live := jobs[:0]
	var spans int64
	for _, j := range jobs {
		if j.state.CompareAndSwap(jobQueued, jobTaken) {
			live = append(live, j)
			spans += j.spans
			r.queuedReqs.Add(-1)
			r.queuedSpans.Add(-j.spans)
		}
	}
	if len(live) == 0 {
		return
	}
	reqs := int64(len(live))
	r.busyReqs.Add(reqs)
	r.busySpans.Add(spans)
	n, err := r.put(live)
	if err == nil && r.fsync {
		if s, ok := r.w.(interface{ Sync() error }); ok {
			if serr := s.Sync(); serr != nil && !syncUnsupported(serr) {
				err = fmt.Errorf("sync: %w", serr)
			}
		}
	}
	switch {
	case err != nil && r.abandoned.Load():
		// Close closed the file under the write: not the disk's doing,
		// and nobody reads the counts any more.
	case err != nil:
		r.failures.Add(1)
		r.errMu.Lock()
		r.err = err
		r.errMu.Unlock()
		r.lastTry.Store(time.Now().UnixNano())
		r.cutBack()
		if !r.failing.Swap(true) && r.onChange != nil {
			r.onChange()
		}
	default:
		r.size += n
		r.written.Add(reqs)
		r.writtenSpans.Add(spans)
		if r.failing.Swap(false) && r.onChange != nil {
			r.onChange()
		}
	}
	r.busyReqs.Add(-reqs)
	r.busySpans.Add(-spans)
	for _, j := range live {
		if err != nil {
			j.done <- &recordError{err}
		} else {
			j.done <- nil
		}
	}
}

// put writes the jobs' lines, gathering small ones into chunks, and
// returns the bytes written.
func (r *Recorder) put(jobs []*recordJob) (int64, error) {
	var total int64
	buf := r.chunk[:0]
	if r.ragged {
		buf = append(buf, '\n')
	}
	flush := func() error {
		if len(buf) == 0 {
			return nil
		}
		n, err := r.w.Write(buf)
		total += int64(n)
		buf = buf[:0]
		return err
	}
	for _, j := range jobs {
		if len(j.lines) >= recordChunk {
			if err := flush(); err != nil {
				return total, err
			}
			n, err := r.w.Write(j.lines)
			total += int64(n)
			if err != nil {
				return total, err
			}
			continue
		}
		if len(buf)+len(j.lines) > recordChunk {
			if err := flush(); err != nil {
				return total, err
			}
		}
		buf = append(buf, j.lines...)
	}
	err := flush()
	if cap(buf) <= 4*recordChunk {
		r.chunk = buf[:0]
	}
	if err == nil {
		r.ragged = false
	}
	return total, err
}

// cutBack removes what a failed write left of its lines, so the file ends
// with the last whole, acknowledged line. A pipe cannot be cut: its reader
// got part of a line, so the next write starts a new one.
func (r *Recorder) cutBack() {
	if r.file == nil || !r.regular {
		r.ragged = true
		return
	}
	if err := r.file.Truncate(r.size); err != nil {
		r.ragged = true
	}
}

// RecordCause is the short reason for a record error, fit for a status
// line: the OS's words ("no space left on device") when there are some.
func RecordCause(err error) string {
	if err == nil {
		return "record failed"
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno.Error()
	}
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// syncUnsupported reports a sync refused because the file cannot be synced
// (a pipe, a FIFO, a terminal: `--record /dev/stdout | …`): what was written
// has reached its reader, nothing is lost.
func syncUnsupported(err error) bool {
	return errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOTSUP) || errors.Is(err, syscall.ENOTTY)
}
