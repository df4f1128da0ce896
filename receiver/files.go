package receiver

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"unsafe"

	"github.com/nemo-gym/gymtrace/model"
)

// ReadOptions configure ReadFiles. The zero value is ready to use.
type ReadOptions struct {
	Limits Limits
	// MaxLine is the longest line accepted, in bytes (default
	// DefaultMaxLine, 256 MiB).
	MaxLine int
	// BatchSize is the number of spans handed to the store at once (default 512).
	BatchSize int
	// MaxSamples bounds the bad and skipped lines kept as samples (default 20).
	MaxSamples int
	// Stdin is read for the path "-" (default os.Stdin).
	Stdin io.Reader
}

func (o ReadOptions) norm() ReadOptions {
	if o.MaxLine <= 0 {
		o.MaxLine = DefaultMaxLine
	}
	if o.BatchSize <= 0 {
		o.BatchSize = 512
	}
	if o.MaxSamples <= 0 {
		o.MaxSamples = 20
	}
	if o.Stdin == nil {
		o.Stdin = os.Stdin
	}
	return o
}

// BadLine is one line (or a whole binary file, Line 0) that could not be read.
type BadLine struct {
	File   string
	Line   int
	Reason string
}

// String formats the line as file:line: reason.
func (b BadLine) String() string {
	if b.Line == 0 {
		return b.File + ": " + b.Reason
	}
	return fmt.Sprintf("%s:%d: %s", b.File, b.Line, b.Reason)
}

// Input formats a file may hold, as FileStat.Format names them.
const (
	FormatConsole  = "console"   // Python SDK console span lines
	FormatOTLPJSON = "otlp-json" // one OTLP/JSON request per line
	FormatProtobuf = "protobuf"  // one binary OTLP request (traces, metrics or logs)
	// FormatLengthPrefixed is the Collector file exporter's format: proto:
	// requests behind 4-byte big-endian lengths, each maybe zstd-compressed.
	FormatLengthPrefixed = "length-prefixed-protobuf"
	FormatMixed          = "mixed" // console and OTLP/JSON lines both
	FormatNone           = "none"  // no spans found
)

// FileStat is what was read from one file.
type FileStat struct {
	Path   string
	Format string
	// Compression names the whole-file compression undone ("gzip",
	// "zstd"), "" for none.
	Compression string
	Lines       int
	Spans       int
	Skipped     int
	Bad         int
}

// FileReport sums what ReadFiles read. Samples keep the first few lines of
// each kind so the user can find them; the counts are complete.
type FileReport struct {
	Files []FileStat
	// Spans counts spans handed to the store.
	Spans int
	// Decode counts spans rejected as invalid and attributes cut by Limits.
	Decode Report
	// MetricPoints and LogRecords count what metric and log lines held.
	MetricPoints, LogRecords int
	// Skipped counts lines without spans: plain text, metric and log records.
	Skipped        int
	SkippedSamples []BadLine
	// BadLines counts lines that looked like records but could not be read.
	BadLines   int
	BadSamples []BadLine
}

func (r *FileReport) bad(b BadLine, max int) {
	r.BadLines++
	if len(r.BadSamples) < max {
		r.BadSamples = append(r.BadSamples, b)
	}
}

func (r *FileReport) skip(b BadLine, max int) {
	r.Skipped++
	if len(r.SkippedSamples) < max {
		r.SkippedSamples = append(r.SkippedSamples, b)
	}
}

// ReadFiles loads captures into store: OTLP/JSON lines, console logs (mixed
// with other output), one binary protobuf request per file, or the
// Collector file exporter's length-prefixed protobuf, detected per file by
// content (gzip or zstd compression allowed). A file none of these
// recognises fails with ErrUnrecognised. "-" reads stdin. Files are read one after another, in
// order, so the same inputs always load the same way. Bad lines are counted
// and sampled in the report, never fatal; an error means a file could not be
// opened or read, and the report still holds everything else.
func ReadFiles(store *model.Store, paths []string, opts ReadOptions) (FileReport, error) {
	opts = opts.norm()
	var rep FileReport
	var errs []error
	l := model.NewLocal(store.Interner())
	for _, p := range paths {
		var r io.Reader
		name := p
		if p == "-" {
			r, name = opts.Stdin, "stdin"
		} else {
			f, err := os.Open(p)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			r = f
			defer f.Close()
		}
		if err := readOne(store, l, name, r, opts, &rep); err != nil {
			errs = append(errs, err)
		}
	}
	store.CountCapped(rep.Decode.capped())
	store.CountRepaired(int64(rep.Decode.ValuesRepaired))
	return rep, errors.Join(errs...)
}

// ReadStream loads one capture from r, named name in reports.
func ReadStream(store *model.Store, name string, r io.Reader, opts ReadOptions) (FileReport, error) {
	opts = opts.norm()
	var rep FileReport
	err := readOne(store, model.NewLocal(store.Interner()), name, r, opts, &rep)
	store.CountCapped(rep.Decode.capped())
	store.CountRepaired(int64(rep.Decode.ValuesRepaired))
	return rep, err
}

// fileReader loads one file.
type fileReader struct {
	store  *model.Store
	l      *model.Local
	opts   ReadOptions
	rep    *FileReport
	stat   FileStat
	batch  model.Batch // from model.NewBatch: the store recycles its array
	kinds  [2]bool     // saw console spans, saw OTLP/JSON
	points int
	logs   int
	ahead  *decodeAhead // OTLP/JSON lines decoded on other cores; nil on one
}

func readOne(store *model.Store, l *model.Local, name string, r io.Reader, opts ReadOptions, rep *FileReport) error {
	fr := &fileReader{store: store, l: l, opts: opts, rep: rep, stat: FileStat{Path: name, Format: FormatNone}}
	f, br, via, closers, err := detectFormat(bufio.NewReaderSize(r, 64<<10), name)
	for _, c := range closers {
		defer c.Close()
	}
	fr.stat.Compression = strings.Join(via, "+")
	if err == nil {
		err = f.read(fr, br)
	} else if errors.Is(err, ErrUnrecognised) {
		fr.stat.Bad++
		fr.rep.bad(BadLine{File: name, Reason: err.Error()}, opts.MaxSamples)
	}
	if ferr := fr.flush(); err == nil {
		err = ferr
	}
	if fr.points > 0 || fr.logs > 0 {
		store.Count(int64(fr.points), int64(fr.logs))
		rep.MetricPoints += fr.points
		rep.LogRecords += fr.logs
	}
	rep.Files = append(rep.Files, fr.stat)
	if err != nil {
		return fmt.Errorf("%s: %w", fr.stat.Path, err)
	}
	return nil
}

// add queues b's spans for the store; b is a part of a decoded batch.
func (fr *fileReader) add(b model.Batch) error {
	if fr.batch.Spans == nil {
		fr.batch = model.NewBatch(fr.opts.BatchSize)
	}
	fr.batch.AppendBatch(b)
	return fr.added(len(b.Spans))
}

// addSpan queues one span of the given trace, whose parent is parent.
func (fr *fileReader) addSpan(trace model.TraceID, parent model.SpanID, sp model.Span) error {
	if fr.batch.Spans == nil {
		fr.batch = model.NewBatch(fr.opts.BatchSize)
	}
	fr.batch.Append(trace, parent, sp)
	return fr.added(1)
}

// added counts n spans queued and hands the batch over once full.
func (fr *fileReader) added(n int) error {
	fr.stat.Spans += n
	fr.rep.Spans += n
	if len(fr.batch.Spans) >= fr.opts.BatchSize {
		return fr.flush()
	}
	return nil
}

func (fr *fileReader) flush() error {
	if len(fr.batch.Spans) == 0 {
		return nil
	}
	// The store owns the batch once added; add starts the next one.
	err := fr.store.Add(fr.batch)
	fr.batch = model.Batch{}
	return err
}

func (fr *fileReader) readProtobuf(br *bufio.Reader) error {
	fr.stat.Format = FormatProtobuf
	b, err := io.ReadAll(br)
	if err != nil {
		return err
	}
	fr.stat.Lines = 1
	if err := fr.protoMessage(0, b); err != nil {
		return err
	}
	return nil
}

func (fr *fileReader) readLines(br *bufio.Reader) (err error) {
	cd := newConsoleDecoder(fr.l, fr.opts.Limits)
	defer fr.doneConsole(cd)
	if runtime.GOMAXPROCS(0) > 1 {
		fr.ahead = newDecodeAhead(fr.store.Interner(), fr.opts.Limits)
		defer func() {
			// Whatever is still being decoded is taken before the file
			// ends; an error stops it all the same.
			if derr := fr.ahead.drain(fr, 0); err == nil {
				err = derr
			}
			fr.ahead.close()
			fr.ahead = nil
		}()
	}
	var (
		buf []byte
		obj multiLine
	)
	for n := 1; ; n++ {
		line, newline, tooLong, err := readLine(br, &buf, fr.opts.MaxLine)
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		if len(line) == 0 && !tooLong && errors.Is(err, io.EOF) {
			break
		}
		if n == 1 {
			line = bytes.TrimPrefix(line, utf8BOM)
		}
		fr.stat.Lines++
		if fr.ahead != nil {
			if !obj.open() && !tooLong && looksLikeTraces(line) {
				if lerr := fr.ahead.submit(fr, n, bytes.TrimSpace(line), newline, &buf); lerr != nil {
					return lerr
				}
				if errors.Is(err, io.EOF) {
					break
				}
				continue
			}
			// Anything else happens after the lines before it.
			if lerr := fr.ahead.drain(fr, 0); lerr != nil {
				return lerr
			}
		}
		switch {
		case obj.open():
			if lerr := obj.add(fr, cd, n, line, tooLong); lerr != nil {
				return lerr
			}
		case tooLong:
			fr.badLine(n, fmt.Sprintf("line longer than the %d-byte line bound, skipped", fr.opts.MaxLine))
		case isObjectStart(line):
			obj.start(n, line)
		default:
			if lerr := fr.line(cd, n, line, newline); lerr != nil {
				return lerr
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
	}
	if fr.ahead != nil {
		if err := fr.ahead.drain(fr, 0); err != nil {
			return err
		}
	}
	if obj.open() {
		fr.badLine(obj.first, "truncated JSON object: the file ends before its closing '}'")
	}
	switch {
	case fr.kinds[0] && fr.kinds[1]:
		fr.stat.Format = FormatMixed
	case fr.kinds[0]:
		fr.stat.Format = FormatConsole
	case fr.kinds[1]:
		fr.stat.Format = FormatOTLPJSON
	}
	return nil
}

// doneConsole keeps what the console decoder counted and releases it.
func (fr *fileReader) doneConsole(cd *consoleDecoder) {
	cd.rep.ValuesRepaired += cd.s.repaired
	cd.s.repaired = 0
	fr.rep.Decode.Add(cd.rep)
	cd.release()
}

// utf8BOM opens files some Windows tools and Python's utf-8-sig write.
var utf8BOM = []byte("\xef\xbb\xbf")

// isObjectStart reports a line that opens a multi-line JSON object as
// Python's json.dumps(indent=...) writes one, the default of the OTel
// Python SDK's console exporters: "{" alone on its line.
func isObjectStart(line []byte) bool {
	return string(bytes.TrimSpace(line)) == "{"
}

// multiLine gathers an indented JSON object, from its "{" line to the "}"
// line that completes it, bounded by the line bound.
type multiLine struct {
	first int // line number of the "{", 0 when no object is open
	text  []byte
	over  bool // longer than the line bound: skipped to its end
}

func (m *multiLine) open() bool { return m.first > 0 }

func (m *multiLine) start(n int, line []byte) {
	m.first, m.over = n, false
	m.text = append(m.text[:0], bytes.TrimSpace(line)...)
}

// add takes the next line; at the closing brace the object is decoded as
// one line (newlines are JSON whitespace).
func (m *multiLine) add(fr *fileReader, cd *consoleDecoder, n int, line []byte, tooLong bool) error {
	if !m.over {
		if tooLong || len(m.text)+1+len(line) > fr.opts.MaxLine {
			m.over, m.text = true, m.text[:0]
		} else {
			m.text = append(append(m.text, '\n'), line...)
		}
	}
	if t := bytes.TrimSpace(line); len(t) == 0 || t[0] != '}' {
		return nil
	}
	if !m.over {
		// A "}" may close a nested object (indent=0 puts those at the
		// start of lines too): go on while the text is still unfinished.
		var sc scan
		sc.reset(m.text)
		if err := sc.skip(); errors.Is(err, errTruncatedLine) {
			return nil
		}
	}
	first := m.first
	m.first = 0
	if m.over {
		fr.badLine(first, fmt.Sprintf("JSON object longer than the %d-byte line bound, skipped", fr.opts.MaxLine))
		return nil
	}
	return fr.line(cd, first, m.text, true)
}

func (fr *fileReader) badLine(n int, reason string) {
	fr.stat.Bad++
	fr.rep.bad(BadLine{File: fr.stat.Path, Line: n, Reason: reason}, fr.opts.MaxSamples)
}

func (fr *fileReader) skipLine(n int, reason string) {
	fr.stat.Skipped++
	fr.rep.skip(BadLine{File: fr.stat.Path, Line: n, Reason: reason}, fr.opts.MaxSamples)
}

// line handles one line: a span, a request, a record to count, or text.
func (fr *fileReader) line(cd *consoleDecoder, n int, line []byte, newline bool) error {
	t := bytes.TrimSpace(line)
	if len(t) == 0 {
		return nil
	}
	if t[0] != '{' {
		fr.skipLine(n, "not JSON (plain text)")
		return nil
	}
	bad := func(err error) {
		reason := err.Error()
		if !newline {
			reason = "truncated last line (no newline at end of file): " + reason
		}
		fr.badLine(n, reason)
	}
	sp, trace, kind, err := cd.line(t)
	if err != nil {
		bad(err)
		return nil
	}
	switch kind {
	case recSpan:
		fr.kinds[0] = true
		return fr.addSpan(trace, cd.parent, sp)
	case recOTLPTraces:
		b, rep, err := DecodeJSON(fr.l, t, fr.opts.Limits)
		return fr.tracesDecoded(n, newline, b, rep, err)
	case recMetrics:
		k, err := MetricPointsByNameJSON(t, func(name []byte, p int) { fr.store.CountMetric(string(name), int64(p)) })
		if err != nil {
			bad(err)
			return nil
		}
		fr.points += k
		fr.skipLine(n, fmt.Sprintf("metric record (%d data points)", k))
	case recLogs:
		k, err := CountLogRecordsJSON(t)
		if err != nil {
			bad(err)
			return nil
		}
		fr.logs += k
		fr.skipLine(n, fmt.Sprintf("log records (%d)", k))
	case recLogRecord:
		fr.logs++
		fr.skipLine(n, "log record")
	default:
		fr.skipLine(n, "JSON that is not a span")
	}
	return nil
}

// looksLikeTraces reports a line that opens with the resource spans of an
// OTLP/JSON trace request, as the record and the OTLP file writers put
// them first: such lines are decoded ahead.
func looksLikeTraces(line []byte) bool {
	t := bytes.TrimLeft(line, " \t")
	if len(t) == 0 || t[0] != '{' {
		return false
	}
	t = bytes.TrimLeft(t[1:], " \t")
	for _, k := range []string{`"resourceSpans"`, `"resource_spans"`} {
		if bytes.HasPrefix(t, []byte(k)) {
			return true
		}
	}
	return false
}

// tracesDecoded takes what decoding OTLP/JSON line n gave.
func (fr *fileReader) tracesDecoded(n int, newline bool, b model.Batch, rep Report, err error) error {
	fr.rep.Decode.Add(rep)
	if err != nil {
		reason := err.Error()
		if !newline {
			reason = "truncated last line (no newline at end of file): " + reason
		}
		fr.badLine(n, reason)
		return nil
	}
	fr.kinds[1] = true
	return fr.add(b)
}

// readLine returns the next line without its line ending. newline reports
// whether the line ended with '\n' (false for a last line cut short). A line
// longer than max is consumed and reported as tooLong without being kept.
func readLine(br *bufio.Reader, buf *[]byte, max int) (line []byte, newline, tooLong bool, err error) {
	*buf = (*buf)[:0]
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			if len(*buf)+len(chunk) > max+2 {
				tooLong = true
				*buf = (*buf)[:0]
			} else if err == nil && len(*buf) == 0 {
				// The common case: the whole line sits in the reader's buffer.
				line = chunk
			} else {
				*buf = append(*buf, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		newline = err == nil
		if tooLong {
			return nil, newline, true, err
		}
		if line == nil {
			line = *buf
		}
		if newline {
			line = line[:len(line)-1] // a line read without error ends in '\n'
			if n := len(line); n > 0 && line[n-1] == '\r' {
				line = line[:n-1]
			}
		}
		if len(line) > max {
			return nil, newline, true, err
		}
		return line, newline, tooLong, err
	}
}

// decodeAhead decodes OTLP/JSON lines (each a whole request, often of
// thousands of spans) on every core while the file is read, and hands them
// back in line order: what the store receives, and so every id and count,
// is what reading one line after another gives. A resource new to the
// interner is added only once every earlier line is decoded (decodeJSON's
// turn), so resources are numbered in file order too.
type decodeAhead struct {
	jobs    chan *aheadJob
	pending []*aheadJob // submitted, in line order
	free    [][]byte    // line buffers to reuse
	wg      sync.WaitGroup
}

// aheadMax bounds the lines decoded or waiting at once (each holds a copy
// of its line).
const aheadMax = 4

type aheadJob struct {
	n       int
	newline bool
	line    []byte
	before  []chan struct{} // done of every earlier job still pending
	done    chan struct{}
	batch   model.Batch
	rep     Report
	err     error
}

func newDecodeAhead(t *model.Interner, lim Limits) *decodeAhead {
	a := &decodeAhead{jobs: make(chan *aheadJob, aheadMax)}
	for range runtime.GOMAXPROCS(0) {
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			l := model.NewLocal(t)
			for j := range a.jobs {
				turn := func() {
					for _, c := range j.before {
						<-c
					}
				}
				j.batch, j.rep, j.err = decodeJSON(l, j.line, lim, turn)
				close(j.done)
			}
		}()
	}
	return a
}

// submit queues line n for decoding, after taking what is done and, when
// aheadMax lines are out, waiting for the oldest. A line that lies in
// *buf (a long one, which the reader gathered there) is taken with the
// buffer, and *buf replaced; a short one is copied.
func (a *decodeAhead) submit(fr *fileReader, n int, line []byte, newline bool, buf *[]byte) error {
	if err := a.drain(fr, aheadMax-1); err != nil {
		return err
	}
	j := &aheadJob{n: n, newline: newline, done: make(chan struct{})}
	var spare []byte
	if k := len(a.free); k > 0 {
		spare, a.free = a.free[k-1][:0], a.free[:k-1]
	}
	if within(line, *buf) {
		j.line, *buf = line, spare
	} else {
		j.line = append(spare, line...)
	}
	for _, p := range a.pending {
		j.before = append(j.before, p.done)
	}
	a.pending = append(a.pending, j)
	a.jobs <- j // FIFO: every earlier job has started, so none waits for a later one
	return nil
}

// within reports whether s lies in b's array.
func within(s, b []byte) bool {
	if len(s) == 0 || cap(b) == 0 {
		return false
	}
	p, q := uintptr(unsafe.Pointer(unsafe.SliceData(s))), uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return p >= q && p < q+uintptr(cap(b))
}

// drain hands the decoded lines to fr in order until at most keep are
// pending, waiting for those it must take.
func (a *decodeAhead) drain(fr *fileReader, keep int) error {
	for len(a.pending) > 0 {
		j := a.pending[0]
		if len(a.pending) <= keep {
			select {
			case <-j.done:
			default:
				return nil
			}
		}
		<-j.done
		a.pending = a.pending[1:]
		if cap(j.line) <= 64<<20 {
			a.free = append(a.free, j.line)
		}
		if err := fr.tracesDecoded(j.n, j.newline, j.batch, j.rep, j.err); err != nil {
			a.pending = nil
			return err
		}
	}
	return nil
}

// close stops the workers; call after drain.
func (a *decodeAhead) close() {
	close(a.jobs)
	a.wg.Wait()
}
