package receiver

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"

	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zlib"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
)

// errTooLarge is a body that inflates past its bound.
var errTooLarge = errors.New("decompressed size over the limit")

// inflater decompresses src into dst, stopping with errTooLarge once more
// than limit bytes come out. A nil dst only checks: the output is counted
// and dropped, so telling a decompression bomb costs no memory.
type inflater func(src []byte, dst *bytes.Buffer, limit int64) error

// httpEncodings are the Content-Encodings OTLP/HTTP accepts: those of the
// Collector's HTTP receiver, so any sender configured for a Collector works
// here too. "deflate" is zlib-wrapped per HTTP, as the Collector reads it;
// a raw deflate stream is taken as well since some clients send one.
var httpEncodings = map[string]inflater{
	"gzip":            inflateGzip,
	"x-gzip":          inflateGzip,
	"zstd":            inflateZstd,
	"zlib":            inflateZlib,
	"deflate":         inflateZlib,
	"snappy":          inflateSnappy,
	"x-snappy-framed": inflateSnappyFramed,
	"lz4":             inflateLZ4,
}

// encodingNames lists httpEncodings for error messages.
func encodingNames() string {
	names := make([]string, 0, len(httpEncodings))
	for n := range httpEncodings {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// normEncoding folds a Content-Encoding header to a key of httpEncodings;
// "" means none.
func normEncoding(h string) string {
	e := strings.ToLower(strings.TrimSpace(h))
	if e == "identity" {
		return ""
	}
	return e
}

// checkScratch holds what a check (a nil dst) reads and drops.
var checkScratch = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

// copyLimited reads r into dst, failing with errTooLarge past limit; with
// a nil dst it only counts.
func copyLimited(dst *bytes.Buffer, r io.Reader, limit int64) error {
	if dst == nil {
		bp := checkScratch.Get().(*[]byte)
		defer checkScratch.Put(bp)
		n := int64(0)
		for n <= limit {
			k, err := r.Read(*bp)
			n += int64(k)
			if err == io.EOF {
				break
			}
			if err != nil {
				return err
			}
		}
		if n > limit {
			return errTooLarge
		}
		return nil
	}
	// Not dst.ReadFrom: doubling would give a body just past the limit twice
	// the limit's memory. Here dst grows the same way but never past
	// limit+1 bytes, the most needed to know the body is too large.
	for int64(dst.Len()) <= limit {
		if dst.Available() == 0 {
			size := min(max(2*int64(dst.Cap()), 64<<10), limit+1)
			nb := make([]byte, dst.Len(), size)
			copy(nb, dst.Bytes())
			*dst = *bytes.NewBuffer(nb)
		}
		b := dst.AvailableBuffer()[:min(int64(dst.Available()), limit+1-int64(dst.Len()))]
		n, err := r.Read(b)
		dst.Write(b[:n])
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
	return errTooLarge
}

var gzipPool sync.Pool // *gzip.Reader

func inflateGzip(src []byte, dst *bytes.Buffer, limit int64) error {
	zr, _ := gzipPool.Get().(*gzip.Reader)
	var err error
	if zr == nil {
		zr, err = gzip.NewReader(bytes.NewReader(src))
	} else {
		err = zr.Reset(bytes.NewReader(src))
	}
	if err != nil {
		return err
	}
	defer gzipPool.Put(zr)
	return copyLimited(dst, zr, limit)
}

// zstdPool holds synchronous decoders: one request is one stream, so the
// decoder's own goroutines would only add cost.
var zstdPool sync.Pool // *zstd.Decoder

func getZstd() (*zstd.Decoder, error) {
	if d, ok := zstdPool.Get().(*zstd.Decoder); ok {
		return d, nil
	}
	// The window bound keeps a hostile frame header from reserving more
	// memory than any sane request needs.
	return zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(64<<20))
}

func putZstd(d *zstd.Decoder) {
	if d.Reset(nil) == nil {
		zstdPool.Put(d)
	}
}

func inflateZstd(src []byte, dst *bytes.Buffer, limit int64) error {
	d, err := getZstd()
	if err != nil {
		return err
	}
	defer putZstd(d)
	if err := d.Reset(bytes.NewReader(src)); err != nil {
		return err
	}
	return copyLimited(dst, d, limit)
}

// isZlibHeader reports whether b starts with a zlib (RFC 1950) header:
// deflate method and a header checksum divisible by 31.
func isZlibHeader(b []byte) bool {
	return len(b) >= 2 && b[0]&0x0f == 8 && b[0]>>4 <= 7 && (uint16(b[0])<<8|uint16(b[1]))%31 == 0
}

func inflateZlib(src []byte, dst *bytes.Buffer, limit int64) error {
	if !isZlibHeader(src) {
		fr := flate.NewReader(bytes.NewReader(src))
		defer fr.Close()
		return copyLimited(dst, fr, limit)
	}
	zr, err := zlib.NewReader(bytes.NewReader(src))
	if err != nil {
		return err
	}
	defer zr.Close()
	return copyLimited(dst, zr, limit)
}

// snappyStreamMagic opens every framed snappy stream (its stream identifier
// chunk).
var snappyStreamMagic = []byte("\xff\x06\x00\x00sNaPpY")

// inflateSnappy takes both forms under "snappy": the block form the name
// means, and the framed form Collectors before v0.125 sent under it.
func inflateSnappy(src []byte, dst *bytes.Buffer, limit int64) error {
	if bytes.HasPrefix(src, snappyStreamMagic) {
		return inflateSnappyFramed(src, dst, limit)
	}
	// The block form states its decoded length up front: check it before
	// allocating.
	n, err := s2.DecodedLen(src)
	if err != nil {
		return err
	}
	if int64(n) > limit {
		return errTooLarge
	}
	if dst == nil {
		return nil
	}
	dst.Grow(n)
	out, err := s2.Decode(dst.AvailableBuffer()[:n], src)
	if err != nil {
		return err
	}
	dst.Write(out)
	return nil
}

func inflateSnappyFramed(src []byte, dst *bytes.Buffer, limit int64) error {
	// s2's stream reader reads snappy's framing format too.
	r := s2.NewReader(bytes.NewReader(src), s2.ReaderMaxBlockSize(64<<10))
	return copyLimited(dst, r, limit)
}

func inflateLZ4(src []byte, dst *bytes.Buffer, limit int64) error {
	return copyLimited(dst, lz4.NewReader(bytes.NewReader(src)), limit)
}

// inflateError turns a decompression failure into the HTTP answer.
func inflateError(enc string, err error, limit int64) *httpError {
	if errors.Is(err, errTooLarge) {
		return tooLarge("decompressed body", -1, limit)
	}
	return &httpError{status: http.StatusBadRequest, code: codes.InvalidArgument, msg: fmt.Sprintf("bad %s body: %v", enc, err)}
}

// The gRPC compressors the Collector's gRPC receiver registers beside gzip:
// zstd and (framed) snappy; and deflate, which the Collector lacks but the
// OTel Python SDK's gRPC exporter offers (OTEL_EXPORTER_OTLP_COMPRESSION=
// deflate). gRPC bounds the decompressed
// message by MaxRecvMsgSize itself.
func init() {
	if encoding.GetCompressor("zstd") == nil {
		encoding.RegisterCompressor(grpcZstd{})
	}
	if encoding.GetCompressor("snappy") == nil {
		encoding.RegisterCompressor(grpcSnappy{})
	}
	if encoding.GetCompressor("deflate") == nil {
		encoding.RegisterCompressor(grpcDeflate{})
	}
}

// grpcDeflate is gRPC's "deflate": a zlib stream (RFC 1950), as gRPC core
// (under Python's grpcio) writes it; a raw deflate stream is taken too, as
// over HTTP.
type grpcDeflate struct{}

func (grpcDeflate) Name() string { return "deflate" }

func (grpcDeflate) Compress(w io.Writer) (io.WriteCloser, error) {
	return zlib.NewWriter(w), nil
}

func (grpcDeflate) Decompress(r io.Reader) (io.Reader, error) {
	br := bufio.NewReader(r)
	head, _ := br.Peek(2)
	if !isZlibHeader(head) {
		return flate.NewReader(br), nil
	}
	return zlib.NewReader(br)
}

type grpcZstd struct{}

func (grpcZstd) Name() string { return "zstd" }

func (grpcZstd) Compress(w io.Writer) (io.WriteCloser, error) {
	return zstd.NewWriter(w, zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(512<<10))
}

func (grpcZstd) Decompress(r io.Reader) (io.Reader, error) {
	d, err := getZstd()
	if err != nil {
		return nil, err
	}
	if err := d.Reset(r); err != nil {
		putZstd(d)
		return nil, err
	}
	return &zstdStream{d: d}, nil
}

// zstdStream returns its decoder to the pool at the end of the message.
type zstdStream struct{ d *zstd.Decoder }

func (z *zstdStream) Read(p []byte) (int, error) {
	if z.d == nil {
		return 0, io.EOF
	}
	n, err := z.d.Read(p)
	if err != nil {
		putZstd(z.d)
		z.d = nil
	}
	return n, err
}

type grpcSnappy struct{}

func (grpcSnappy) Name() string { return "snappy" }

func (grpcSnappy) Compress(w io.Writer) (io.WriteCloser, error) {
	return s2.NewWriter(w, s2.WriterSnappyCompat(), s2.WriterConcurrency(1)), nil
}

func (grpcSnappy) Decompress(r io.Reader) (io.Reader, error) {
	return s2.NewReader(r, s2.ReaderMaxBlockSize(64<<10)), nil
}
