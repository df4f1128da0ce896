package receiver

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// DefaultRecordFlush is how long a written record line may wait in the
// Recorder's buffer before it is handed to the operating system. What the
// OS holds survives the process being killed, so a SIGKILL loses at most
// the requests queued for the writer (RecordQueue) and this much of the
// buffer.
const DefaultRecordFlush = 100 * time.Millisecond

// Recorder appends accepted trace requests to a writer as OTLP/JSON lines
// (one ExportTraceServiceRequest per line, hex ids, 64-bit integers as
// strings), the format the file readers load. One goroutine writes, fed by a
// bounded queue, so a slow disk slows no handler: when the queue is full the
// request is refused as retryable instead. Once a write fails (a full disk)
// the record is broken for good: requests are still served from the live
// store, and the spans the record will not hold are counted (Lost).
//
// reserve, release and push may be called from any goroutine; Close once,
// after the last push.
type Recorder struct {
	w     io.Writer
	file  *os.File // set when the Recorder owns a file: Close syncs and closes it
	bw    *bufio.Writer
	every time.Duration
	slots chan struct{} // one token per queued or reserved request
	q     chan recordItem
	done  chan struct{}

	mu      sync.Mutex
	closed  bool
	pending sync.WaitGroup // reservations not yet pushed or released

	broken   atomic.Bool   // a write failed: nothing more is written
	failed   chan struct{} // closed when broken is set
	failOnce sync.Once
	written  atomic.Int64
	// unwrittenReqs and unwrittenSpans are acknowledged but not yet handed
	// to the OS: queued, or in the buffer.
	unwrittenReqs, unwrittenSpans atomic.Int64
	lost                          atomic.Int64 // acknowledged spans the record will not hold
	onLost                        func(n int64, cause string)
	errMu                         sync.Mutex
	err                           error // first write or conversion error
}

type recordItem struct {
	body   []byte
	format wireFormat
	spans  int64
	sig    signal
}

// NewRecorder starts a Recorder writing to w with room for queue requests.
// If w has a Sync method (an *os.File), Close calls it.
func NewRecorder(w io.Writer, queue int) *Recorder {
	if queue <= 0 {
		queue = DefaultRecordQueue
	}
	r := &Recorder{
		w:      w,
		bw:     bufio.NewWriterSize(w, 256<<10),
		every:  DefaultRecordFlush,
		slots:  make(chan struct{}, queue),
		q:      make(chan recordItem, queue),
		done:   make(chan struct{}),
		failed: make(chan struct{}),
	}
	go r.run()
	return r
}

// OpenRecorder opens (creating or appending to) the file at path and starts
// a Recorder on it. A file whose last line was cut short (the process died
// mid-write) first gets a newline, so the next line is not glued onto it.
func OpenRecorder(path string, queue int) (*Recorder, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open record file: %w", err)
	}
	if st, err := f.Stat(); err == nil && st.Size() > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, st.Size()-1); err == nil && last[0] != '\n' {
			if _, err := f.Write([]byte{'\n'}); err != nil {
				f.Close()
				return nil, fmt.Errorf("record file %s: %w", path, err)
			}
		}
	}
	r := NewRecorder(f, queue)
	r.file = f
	return r, nil
}

// reserve takes a queue slot without blocking; false means full or closed,
// and the request must be refused. A broken Recorder still hands out slots:
// its writer only counts what reaches it as lost, so the caller need not
// tell the cases apart.
func (r *Recorder) reserve() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	select {
	case r.slots <- struct{}{}:
		r.pending.Add(1)
		return true
	default:
		return false
	}
}

// release gives back a reserved slot that will not be used.
func (r *Recorder) release() {
	<-r.slots
	r.pending.Done()
}

// push queues a copy of a request of spans spans under a reserved slot. It
// never blocks: the queue has a place for every slot.
func (r *Recorder) push(body []byte, f wireFormat, spans int) {
	r.pushSignal(body, f, signalTraces, spans)
}

// pushSignal is push for any signal: metrics and logs are recorded too, so
// a recording previews like the live store.
func (r *Recorder) pushSignal(body []byte, f wireFormat, sig signal, spans int) {
	r.unwrittenReqs.Add(1)
	r.unwrittenSpans.Add(int64(spans))
	if r.broken.Load() {
		body = nil // the writer only counts it
	} else {
		body = bytes.Clone(body)
	}
	r.q <- recordItem{body: body, format: f, spans: int64(spans), sig: sig}
	r.pending.Done()
}

// Written returns the number of lines handed to the OS so far.
func (r *Recorder) Written() int64 { return r.written.Load() }

// Unwritten returns the requests and spans acknowledged but not yet handed
// to the OS: what a stuck writer holds, or a kill would lose.
func (r *Recorder) Unwritten() (requests, spans int64) {
	return r.unwrittenReqs.Load(), r.unwrittenSpans.Load()
}

// Lost returns the acknowledged spans the record will not hold, because a
// write failed or a request could not be converted.
func (r *Recorder) Lost() int64 { return r.lost.Load() }

// Failed is closed when a write fails; Err then says why.
func (r *Recorder) Failed() <-chan struct{} { return r.failed }

// Broken reports whether a write failed.
func (r *Recorder) Broken() bool { return r.broken.Load() }

// OnLost sets a function called (on the writer goroutine) whenever spans
// are lost, with a short cause fit for a status line. Call before the
// first push.
func (r *Recorder) OnLost(f func(n int64, cause string)) { r.onLost = f }

// Err returns the first write or conversion error, if any.
func (r *Recorder) Err() error {
	r.errMu.Lock()
	defer r.errMu.Unlock()
	return r.err
}

func (r *Recorder) fail(err error) {
	r.errMu.Lock()
	if r.err == nil {
		r.err = err
	}
	r.errMu.Unlock()
}

// Close waits for reserved requests to be queued, writes everything queued,
// flushes, and syncs and closes the file it owns, so every acknowledged span
// is on disk when it returns. It returns the first error met while recording.
func (r *Recorder) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		<-r.done
		return r.Err()
	}
	r.closed = true
	r.mu.Unlock()
	r.pending.Wait()
	close(r.q)
	<-r.done
	if s, ok := r.w.(interface{ Sync() error }); ok {
		if err := s.Sync(); err != nil && !syncUnsupported(err) {
			r.fail(fmt.Errorf("sync record: %w", err))
		}
	}
	if r.file != nil {
		if err := r.file.Close(); err != nil {
			r.fail(fmt.Errorf("close record: %w", err))
		}
	}
	return r.Err()
}

func (r *Recorder) run() {
	defer close(r.done)
	var (
		line              []byte
		bufReqs, bufSpans int64 // written to the buffer, not yet flushed
		lastFlush         = time.Now()
	)
	// unwritten is what a flush or a failure settles.
	settle := func(reqs, spans int64, lost bool) {
		r.unwrittenReqs.Add(-reqs)
		r.unwrittenSpans.Add(-spans)
		if lost {
			r.lose(spans, r.Err())
		} else {
			r.written.Add(reqs)
		}
	}
	flush := func() {
		lastFlush = time.Now()
		if bufReqs == 0 && r.bw.Buffered() == 0 {
			return
		}
		if r.broken.Load() {
			return
		}
		err := r.bw.Flush()
		if err != nil {
			r.breakOn(fmt.Errorf("write record: %w", err))
		}
		settle(bufReqs, bufSpans, err != nil)
		bufReqs, bufSpans = 0, 0
	}
	for it := range r.q {
		if r.broken.Load() {
			settle(1, it.spans, true)
			<-r.slots
			continue
		}
		var err error
		line, err = appendRecordLine(line[:0], it)
		if err != nil {
			r.fail(err)
			settle(1, it.spans, true)
		} else {
			line = append(line, '\n')
			if _, err := r.bw.Write(line); err != nil {
				r.breakOn(fmt.Errorf("write record: %w", err))
				// What the buffer held may be partly on disk; count it lost.
				settle(bufReqs+1, bufSpans+it.spans, true)
				bufReqs, bufSpans = 0, 0
			} else {
				bufReqs++
				bufSpans += it.spans
			}
		}
		<-r.slots
		// Flush whenever the queue runs dry, and at least every r.every
		// under a flood, so little is left in memory for a kill to lose.
		if len(r.q) == 0 || time.Since(lastFlush) >= r.every {
			flush()
		}
	}
	flush()
}

// breakOn marks the record broken by err, once.
func (r *Recorder) breakOn(err error) {
	r.fail(err)
	r.failOnce.Do(func() {
		r.broken.Store(true)
		close(r.failed)
	})
}

func (r *Recorder) lose(n int64, err error) {
	if n == 0 {
		return
	}
	r.lost.Add(n)
	if r.onLost != nil {
		r.onLost(n, RecordCause(err))
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

// appendRecordLine renders one request as a single OTLP/JSON line (without
// the newline). JSON requests are already OTLP/JSON and are only compacted;
// protobuf requests are converted.
func appendRecordLine(dst []byte, it recordItem) ([]byte, error) {
	if it.sig != signalTraces && it.format == formatProto {
		return appendSignalLine(dst, it)
	}
	if it.format == formatJSON {
		buf := bytes.NewBuffer(dst)
		if err := json.Compact(buf, it.body); err != nil {
			return dst, fmt.Errorf("record json request: %w", err)
		}
		return buf.Bytes(), nil
	}
	var req coltrace.ExportTraceServiceRequest
	err := proto.Unmarshal(it.body, &req)
	var bad interface{ InvalidUTF8() bool }
	if errors.As(err, &bad) && bad.InvalidUTF8() {
		// A string the decoder does not read (a trace_state, a scope
		// name) is not UTF-8: repaired as the decoder repairs the strings
		// it reads, the generated types read it.
		req.Reset()
		err = proto.Unmarshal(repairProtoStrings(it.body), &req)
	}
	if err != nil {
		return dst, fmt.Errorf("record protobuf request: %w", err)
	}
	return appendTraceLines(dst, &req, DefaultMaxLine), nil
}

// AppendTraceRequestJSON appends req as OTLP/JSON: lowerCamelCase keys, trace
// and span ids as hex (protojson would write base64, which OTLP/JSON
// forbids), 64-bit integers as decimal strings, enums as integers, and zero
// fields left out.
func AppendTraceRequestJSON(dst []byte, req *coltrace.ExportTraceServiceRequest) []byte {
	dst = append(dst, `{"resourceSpans":[`...)
	for i, rs := range req.GetResourceSpans() {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendResourceSpans(dst, rs)
	}
	return append(dst, "]}"...)
}

// jsonObj writes the members of one JSON object, adding commas.
type jsonObj struct {
	b []byte
	n int
}

func (o *jsonObj) key(k string) {
	if o.n > 0 {
		o.b = append(o.b, ',')
	}
	o.n++
	o.b = append(o.b, '"')
	o.b = append(o.b, k...)
	o.b = append(o.b, `":`...)
}

func (o *jsonObj) str(k, v string) {
	if v != "" {
		o.key(k)
		o.b = appendJSONString(o.b, v)
	}
}

func (o *jsonObj) hexID(k string, v []byte) {
	if len(v) > 0 {
		o.key(k)
		o.b = append(o.b, '"')
		o.b = hex.AppendEncode(o.b, v)
		o.b = append(o.b, '"')
	}
}

func (o *jsonObj) u64(k string, v uint64) {
	if v != 0 {
		o.key(k)
		o.b = append(o.b, '"')
		o.b = strconv.AppendUint(o.b, v, 10)
		o.b = append(o.b, '"')
	}
}

func (o *jsonObj) u32(k string, v uint32) {
	if v != 0 {
		o.key(k)
		o.b = strconv.AppendUint(o.b, uint64(v), 10)
	}
}

func (o *jsonObj) attrs(k string, kvs []*commonpb.KeyValue) {
	if len(kvs) == 0 {
		return
	}
	o.key(k)
	o.b = appendKeyValues(o.b, kvs)
}

func appendResourceSpans(dst []byte, rs *tracepb.ResourceSpans) []byte {
	o := jsonObj{b: append(dst, '{')}
	if res := rs.GetResource(); res != nil {
		o.key("resource")
		ro := jsonObj{b: append(o.b, '{')}
		ro.attrs("attributes", res.GetAttributes())
		ro.u32("droppedAttributesCount", res.GetDroppedAttributesCount())
		o.b = append(ro.b, '}')
	}
	if ss := rs.GetScopeSpans(); len(ss) > 0 {
		o.key("scopeSpans")
		o.b = append(o.b, '[')
		for i, s := range ss {
			if i > 0 {
				o.b = append(o.b, ',')
			}
			o.b = appendScopeSpans(o.b, s)
		}
		o.b = append(o.b, ']')
	}
	o.str("schemaUrl", rs.GetSchemaUrl())
	return append(o.b, '}')
}

func appendScopeSpans(dst []byte, ss *tracepb.ScopeSpans) []byte {
	o := jsonObj{b: append(dst, '{')}
	if sc := ss.GetScope(); sc != nil {
		o.key("scope")
		so := jsonObj{b: append(o.b, '{')}
		so.str("name", sc.GetName())
		so.str("version", sc.GetVersion())
		so.attrs("attributes", sc.GetAttributes())
		so.u32("droppedAttributesCount", sc.GetDroppedAttributesCount())
		o.b = append(so.b, '}')
	}
	if spans := ss.GetSpans(); len(spans) > 0 {
		o.key("spans")
		o.b = append(o.b, '[')
		for i, sp := range spans {
			if i > 0 {
				o.b = append(o.b, ',')
			}
			o.b = appendSpan(o.b, sp)
		}
		o.b = append(o.b, ']')
	}
	o.str("schemaUrl", ss.GetSchemaUrl())
	return append(o.b, '}')
}

func appendSpan(dst []byte, sp *tracepb.Span) []byte {
	o := jsonObj{b: append(dst, '{')}
	o.hexID("traceId", sp.GetTraceId())
	o.hexID("spanId", sp.GetSpanId())
	o.str("traceState", sp.GetTraceState())
	o.hexID("parentSpanId", sp.GetParentSpanId())
	o.u32("flags", sp.GetFlags())
	o.str("name", sp.GetName())
	o.u32("kind", uint32(sp.GetKind()))
	o.u64("startTimeUnixNano", sp.GetStartTimeUnixNano())
	o.u64("endTimeUnixNano", sp.GetEndTimeUnixNano())
	o.attrs("attributes", sp.GetAttributes())
	o.u32("droppedAttributesCount", sp.GetDroppedAttributesCount())
	if evs := sp.GetEvents(); len(evs) > 0 {
		o.key("events")
		o.b = append(o.b, '[')
		for i, ev := range evs {
			if i > 0 {
				o.b = append(o.b, ',')
			}
			eo := jsonObj{b: append(o.b, '{')}
			eo.u64("timeUnixNano", ev.GetTimeUnixNano())
			eo.str("name", ev.GetName())
			eo.attrs("attributes", ev.GetAttributes())
			eo.u32("droppedAttributesCount", ev.GetDroppedAttributesCount())
			o.b = append(eo.b, '}')
		}
		o.b = append(o.b, ']')
	}
	o.u32("droppedEventsCount", sp.GetDroppedEventsCount())
	if links := sp.GetLinks(); len(links) > 0 {
		o.key("links")
		o.b = append(o.b, '[')
		for i, ln := range links {
			if i > 0 {
				o.b = append(o.b, ',')
			}
			lo := jsonObj{b: append(o.b, '{')}
			lo.hexID("traceId", ln.GetTraceId())
			lo.hexID("spanId", ln.GetSpanId())
			lo.str("traceState", ln.GetTraceState())
			lo.attrs("attributes", ln.GetAttributes())
			lo.u32("droppedAttributesCount", ln.GetDroppedAttributesCount())
			lo.u32("flags", ln.GetFlags())
			o.b = append(lo.b, '}')
		}
		o.b = append(o.b, ']')
	}
	o.u32("droppedLinksCount", sp.GetDroppedLinksCount())
	if st := sp.GetStatus(); st != nil {
		o.key("status")
		so := jsonObj{b: append(o.b, '{')}
		so.str("message", st.GetMessage())
		so.u32("code", uint32(st.GetCode()))
		o.b = append(so.b, '}')
	}
	return append(o.b, '}')
}

func appendKeyValues(dst []byte, kvs []*commonpb.KeyValue) []byte {
	dst = append(dst, '[')
	for i, kv := range kvs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"key":`...)
		dst = appendJSONString(dst, kv.GetKey())
		dst = append(dst, `,"value":`...)
		dst = appendAnyValue(dst, kv.GetValue())
		dst = append(dst, '}')
	}
	return append(dst, ']')
}

func appendAnyValue(dst []byte, v *commonpb.AnyValue) []byte {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		dst = append(dst, `{"stringValue":`...)
		dst = appendJSONString(dst, x.StringValue)
	case *commonpb.AnyValue_BoolValue:
		dst = append(dst, `{"boolValue":`...)
		dst = strconv.AppendBool(dst, x.BoolValue)
	case *commonpb.AnyValue_IntValue:
		dst = append(dst, `{"intValue":"`...)
		dst = strconv.AppendInt(dst, x.IntValue, 10)
		dst = append(dst, '"')
	case *commonpb.AnyValue_DoubleValue:
		dst = append(dst, `{"doubleValue":`...)
		dst = appendRecFloat(dst, x.DoubleValue)
	case *commonpb.AnyValue_BytesValue:
		// Only ids are hex in OTLP/JSON; bytes values stay base64.
		dst = append(dst, `{"bytesValue":"`...)
		dst = base64.StdEncoding.AppendEncode(dst, x.BytesValue)
		dst = append(dst, '"')
	case *commonpb.AnyValue_ArrayValue:
		dst = append(dst, `{"arrayValue":{"values":[`...)
		for i, e := range x.ArrayValue.GetValues() {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendAnyValue(dst, e)
		}
		dst = append(dst, "]}"...)
	case *commonpb.AnyValue_KvlistValue:
		dst = append(dst, `{"kvlistValue":{"values":`...)
		dst = appendKeyValues(dst, x.KvlistValue.GetValues())
		dst = append(dst, '}')
	default:
		return append(dst, "{}"...)
	}
	return append(dst, '}')
}

// appendRecFloat writes a double as protojson does: a number, or the strings
// "NaN", "Infinity" and "-Infinity" JSON has no numbers for.
func appendRecFloat(dst []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, `"NaN"`...)
	case math.IsInf(f, 1):
		return append(dst, `"Infinity"`...)
	case math.IsInf(f, -1):
		return append(dst, `"-Infinity"`...)
	}
	return strconv.AppendFloat(dst, f, 'g', -1, 64)
}

// syncUnsupported reports a sync refused because the file cannot be synced
// (a pipe, a FIFO, a terminal: `--record /dev/stdout | …`): what was written
// has reached its reader, nothing is lost.
func syncUnsupported(err error) bool {
	return errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOTSUP) || errors.Is(err, syscall.ENOTTY)
}
