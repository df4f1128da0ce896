package receiver

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/klauspost/compress/zstd"
	"google.golang.org/protobuf/encoding/protowire"
)

// inputFormat is one kind of capture the file readers take, recognised by
// content (the extension only breaks ties). Adding a format is a file
// with its detect and read functions plus one row in inputFormats.
type inputFormat struct {
	name string
	// detect looks at the first bytes (up to peekSize) and the lowercase
	// extension.
	detect func(head []byte, ext string) bool
	read   func(fr *fileReader, br *bufio.Reader) error
}

// inputFormats are tried in order; the first whose detect says yes reads
// the file. Text lines come last: they take anything that is text.
var inputFormats = []inputFormat{
	{FormatLengthPrefixed, isLengthPrefixed, (*fileReader).readLengthPrefixed},
	{FormatProtobuf, isProtobuf, (*fileReader).readProtobuf},
	{"lines", isText, (*fileReader).readLines},
}

// container is a whole-file compression, undone before the format is
// detected.
type container struct {
	name  string
	magic []byte
	open  func(r io.Reader) (io.ReadCloser, error)
}

var containers = []container{
	{"gzip", []byte{0x1f, 0x8b}, func(r io.Reader) (io.ReadCloser, error) { return gzip.NewReader(r) }},
	{"zstd", zstdMagic, func(r io.Reader) (io.ReadCloser, error) {
		d, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(64<<20))
		if err != nil {
			return nil, err
		}
		return d.IOReadCloser(), nil
	}},
}

// zstdMagic opens every zstd frame.
var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

// peekSize is how much of a file detection sees.
const peekSize = 4096

// ErrUnrecognised is a file no reader takes.
var ErrUnrecognised = errors.New("not a capture gymtrace reads")

// unrecognisedHint says what would have been read.
const unrecognisedHint = "binary data that is none of: OTLP/JSON or console lines, " +
	"one OTLP protobuf request, the Collector file exporter's length-prefixed protobuf (format: proto), " +
	"gzip or zstd of these; if it is compressed otherwise, decompress it first"

// detectFormat undoes whole-file compression (at most twice, gzip inside
// zstd say) and picks the format. closers must be closed after reading.
func detectFormat(br *bufio.Reader, name string) (f inputFormat, out *bufio.Reader, via []string, closers []io.Closer, err error) {
	ext := strings.ToLower(filepath.Ext(name))
	for depth := 0; ; depth++ {
		head, _ := br.Peek(peekSize)
		wrapped := false
		for _, c := range containers {
			if depth < 2 && bytes.HasPrefix(head, c.magic) {
				rc, err := c.open(br)
				if err != nil {
					return f, nil, via, closers, fmt.Errorf("%s data: %w", c.name, err)
				}
				closers = append(closers, rc)
				via = append(via, c.name)
				br = bufio.NewReaderSize(rc, 64<<10)
				name = strings.TrimSuffix(strings.TrimSuffix(name, ".gz"), ".zst")
				ext = strings.ToLower(filepath.Ext(name))
				wrapped = true
				break
			}
		}
		if wrapped {
			continue
		}
		for _, f := range inputFormats {
			if f.detect(head, ext) {
				return f, br, via, closers, nil
			}
		}
		return f, br, via, closers, fmt.Errorf("%w: %s", ErrUnrecognised, unrecognisedHint)
	}
}

// isText is what the line readers take: no NUL, and few bytes that text
// does not have (controls, bytes that are not UTF-8), so a log with one bad
// byte from a model's output still reads. Escape sequences of coloured
// logs pass.
func isText(head []byte, _ string) bool {
	if bytes.IndexByte(head, 0) >= 0 {
		return false
	}
	odd := 0
	for i := 0; i < len(head); {
		c := head[i]
		if c < utf8.RuneSelf {
			if c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f' && c != '\v' && c != 0x1b || c == 0x7f {
				odd++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(head[i:])
		if r == utf8.RuneError && size == 1 && len(head)-i >= utf8.UTFMax {
			odd++ // not a rune cut by the peek window
		}
		i += size
	}
	return odd*10 <= len(head)
}

// isProtobuf decides by extension, else by content: a request starts with
// field 1 (resource_spans, tag 0x0a) and is not text.
func isProtobuf(head []byte, ext string) bool {
	switch ext {
	case ".pb", ".bin", ".binpb", ".protobuf":
		return true
	case ".json", ".jsonl", ".ndjson", ".log", ".txt":
		return false
	}
	if len(head) == 0 || head[0] != 0x0a {
		return false
	}
	if bytes.IndexByte(head, 0) >= 0 || !utf8.Valid(head[:max(0, len(head)-utf8.UTFMax)]) {
		return true
	}
	for _, c := range head {
		if c < 0x20 && c != '\n' && c != '\r' && c != '\t' {
			return true
		}
	}
	return false
}

// maxPrefixed bounds one length-prefixed message (64 MiB): the prefix of
// any text or single-request file reads as far more, so the bound also
// tells the formats apart.
const maxPrefixed = 64 << 20

// isLengthPrefixed recognises the Collector file exporter's format: proto
// (and its compressed JSON): each message behind its length as 4 bytes big
// endian, the message a protobuf request (tag 0x0a) or a zstd frame.
func isLengthPrefixed(head []byte, _ string) bool {
	if len(head) < 5 {
		return false
	}
	n := binary.BigEndian.Uint32(head)
	if n == 0 || n > maxPrefixed {
		return false
	}
	body := head[4:]
	return body[0] == 0x0a || bytes.HasPrefix(body, zstdMagic) || len(body) < len(zstdMagic) && bytes.HasPrefix(zstdMagic, body)
}

// readLengthPrefixed reads length-prefixed messages: protobuf requests of
// any signal, or (the Collector's compressed JSON) zstd frames of one
// OTLP/JSON request each.
func (fr *fileReader) readLengthPrefixed(br *bufio.Reader) error {
	fr.stat.Format = FormatLengthPrefixed
	cd := newConsoleDecoder(fr.l, fr.opts.Limits)
	defer fr.doneConsole(cd)
	var (
		hdr [4]byte
		msg []byte
		out bytes.Buffer
	)
	for n := 1; ; n++ {
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			if errors.Is(err, io.ErrUnexpectedEOF) {
				fr.badLine(n, "truncated message length at end of file")
				return nil
			}
			return err
		}
		fr.stat.Lines++
		size := binary.BigEndian.Uint32(hdr[:])
		if size > maxPrefixed {
			fr.badLine(n, fmt.Sprintf("message of %d bytes is over the %d-byte bound; the rest of the file is skipped", size, maxPrefixed))
			return nil
		}
		if cap(msg) < int(size) {
			msg = make([]byte, size)
		}
		msg = msg[:size]
		if _, err := io.ReadFull(br, msg); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				fr.badLine(n, fmt.Sprintf("truncated message: %d bytes announced, the file ends first", size))
				return nil
			}
			return err
		}
		body := msg
		if bytes.HasPrefix(body, zstdMagic) {
			out.Reset()
			if err := inflateZstd(body, &out, int64(fr.opts.MaxLine)); err != nil {
				fr.badLine(n, "zstd message: "+err.Error())
				continue
			}
			body = out.Bytes()
		}
		if t := bytes.TrimSpace(body); len(t) > 0 && t[0] == '{' {
			if err := fr.line(cd, n, t, true); err != nil {
				return err
			}
			continue
		}
		if err := fr.protoMessage(n, body); err != nil {
			return err
		}
	}
}

// protoMessage loads one binary request of whichever signal it holds.
func (fr *fileReader) protoMessage(n int, b []byte) error {
	sig := protoSignal(b)
	if sig == signalMetrics {
		if k, err := CountMetricPoints(b); err == nil {
			MetricPointsByName(b, func(name []byte, p int) { fr.store.CountMetric(string(name), int64(p)) })
			fr.points += k
			fr.skipLine(n, fmt.Sprintf("metric request (%d data points)", k))
			return nil
		}
		sig = signalLogs // a log record whose first field looks like a name
	}
	if sig == signalLogs {
		k, err := CountLogRecords(b)
		if err != nil {
			fr.badLine(n, "protobuf logs request: "+err.Error())
			return nil
		}
		fr.logs += k
		fr.skipLine(n, fmt.Sprintf("log request (%d records)", k))
		return nil
	}
	batch, rep, err := DecodeProto(fr.l, b, fr.opts.Limits)
	fr.rep.Decode.Add(rep)
	if err != nil {
		fr.badLine(n, "protobuf request: "+err.Error())
		return nil
	}
	for i := 0; i < len(batch.Spans); i += fr.opts.BatchSize {
		j := min(i+fr.opts.BatchSize, len(batch.Spans))
		if err := fr.add(batch.Slice(i, j)); err != nil {
			return err
		}
	}
	return nil
}

// protoSignal tells a traces, metrics or logs request apart: the three
// share their outer shape (resource, scope, items), so it looks at the
// fields of the first item, in whatever order they were written (the
// Collector writes them last field first). A span has fixed64 times at 7
// and 8 and a varint kind at 6; a log record a fixed64 time at 1 or 11 and
// a varint severity at 2; a metric only length-delimited fields.
func protoSignal(b []byte) signal {
	item := firstField(firstField(firstField(b, 1), 2), 2)
	if len(item) == 0 {
		return signalTraces // nothing to count either way
	}
	var traceID, spanID, logs bool
	for len(item) > 0 {
		num, typ, n := protowire.ConsumeTag(item)
		if n < 0 {
			break
		}
		item = item[n:]
		m := protowire.ConsumeFieldValue(num, typ, item)
		if m < 0 {
			break
		}
		switch {
		case (num == 7 || num == 8) && typ == protowire.Fixed64Type, num == 6 && typ == protowire.VarintType,
			num == 16 && typ == protowire.Fixed32Type, num == 10 && typ == protowire.VarintType:
			return signalTraces
		case (num == 1 || num == 11) && typ == protowire.Fixed64Type, num == 2 && typ == protowire.VarintType,
			num == 8 && typ == protowire.Fixed32Type, num == 7 && typ == protowire.VarintType:
			logs = true
		case num == 1 && typ == protowire.BytesType:
			v, _ := protowire.ConsumeBytes(item)
			traceID = len(v) == 16
		case num == 2 && typ == protowire.BytesType:
			v, _ := protowire.ConsumeBytes(item)
			spanID = len(v) == 8
		}
		item = item[m:]
	}
	switch {
	case logs:
		return signalLogs
	case traceID && spanID:
		return signalTraces
	}
	return signalMetrics
}

// firstField returns the bytes of the first length-delimited field num of
// the message b, or nil.
func firstField(b []byte, num protowire.Number) []byte {
	for len(b) > 0 {
		n, typ, k := protowire.ConsumeTag(b)
		if k < 0 {
			return nil
		}
		b = b[k:]
		if n == num && typ == protowire.BytesType {
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return nil
			}
			return v
		}
		m := protowire.ConsumeFieldValue(n, typ, b)
		if m < 0 {
			return nil
		}
		b = b[m:]
	}
	return nil
}
