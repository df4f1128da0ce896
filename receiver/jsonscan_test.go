package receiver

import (
	"encoding/binary"
	"github.com/nemo-gym/gymtrace/model"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// TestHasStrSpecial checks the eight-byte test against strSpecial: it may
// never miss a byte that ends the fast scan.
func TestHasStrSpecial(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	interesting := []byte{'"', '\\', 0, 0x1f, 0x20, 0x21, 0x7f, 0x80, 0xff, 'a', '!', '#', '[', ']', 0x5b, 0x5d}
	var w [8]byte
	for n := 0; n < 2_000_000; n++ {
		want := false
		for i := range w {
			if r.IntN(3) == 0 {
				w[i] = interesting[r.IntN(len(interesting))]
			} else {
				w[i] = byte(r.IntN(256))
			}
			want = want || strSpecial[w[i]]
		}
		if got := hasStrSpecial(binary.LittleEndian.Uint64(w[:])); got != want {
			t.Fatalf("hasStrSpecial(% x) = %v, want %v", w, got, want)
		}
	}
}

// TestScannerStrings reads strings whose special bytes sit at every offset
// of the eight-byte scan.
func TestScannerStrings(t *testing.T) {
	for pre := 0; pre < 20; pre++ {
		body := make([]byte, pre)
		for i := range body {
			body[i] = 'a' + byte(i%26)
		}
		for _, tc := range []struct{ tail, want string }{
			{``, ``},
			{`\n`, "\n"},
			{`é`, "é"},
			{`\u00e9x`, "éx"},
		} {
			doc := append([]byte{'"'}, body...)
			doc = append(doc, tc.tail...)
			doc = append(doc, `"  `...)
			var s jsonScanner
			s.reset(doc)
			var scr []byte
			got, err := s.str(&scr)
			if err != nil || string(got) != string(body)+tc.want || s.i != len(doc)-2 {
				t.Fatalf("str(%q) = %q, %v, cursor %d", doc, got, err, s.i)
			}
		}
		var s jsonScanner
		s.reset(append(append([]byte{'"'}, body...), 0x01, '"'))
		var scr []byte
		if _, err := s.str(&scr); err == nil {
			t.Fatalf("a control character after %d bytes was accepted", pre)
		}
	}
}

// TestParseHexID agrees with the model's id parsers on good and bad ids.
func TestParseHexID(t *testing.T) {
	for _, s := range []string{
		"0x5ca30d27c1578b1c", "5ca30d27c1578b1c", "0X5CA30D27C1578B1C", "0x5ca30d27c1578b1", "0x5ca30d27c1578b1cd",
		"0x5ca30d27c1578b1g", "0x", "", "xx5ca30d27c1578b1c", "0x 5ca30d27c1578b1",
	} {
		want, werr := model.ParseSpanID(s)
		var got model.SpanID
		ok := parseHexID(got[:], []byte(s))
		if ok != (werr == nil) || (ok && got != want) {
			t.Errorf("parseHexID(%q) = %v %v, model: %v %v", s, got, ok, want, werr)
		}
	}
	s := "0x243fcc768c47930834e6ed7fbc6634f7"
	want, _ := model.ParseTraceID(s)
	var got model.TraceID
	if !parseHexID(got[:], []byte(s)) || got != want {
		t.Errorf("trace id %q read as %v, want %v", s, got, want)
	}
}

// TestConsoleInt agrees with strconv on every length around the fast path's bound.
func TestConsoleInt(t *testing.T) {
	for _, s := range []string{"0", "-0", "7", "-7", "200", "123456789012345678", "-123456789012345678",
		"1234567890123456789", "9223372036854775807", "-9223372036854775808", "9223372036854775808", "-", "", "1.5", "NaN"} {
		want, werr := strconv.ParseInt(s, 10, 64)
		got, err := consoleInt([]byte(s))
		if got != want || (err == nil) != (werr == nil) {
			t.Errorf("consoleInt(%q) = %d %v, strconv: %d %v", s, got, err, want, werr)
		}
	}
}

// TestSDKContext reads contexts in the SDK's form and in others; both
// paths must give the same ids, and a bad id in the SDK's form the walk's
// error.
func TestSDKContext(t *testing.T) {
	const tid, sid = "243fcc768c47930834e6ed7fbc6634f7", "5ca30d27c1578b1c"
	for _, ctx := range []string{
		`{"trace_id": "0x` + tid + `", "span_id": "0x` + sid + `", "trace_state": "[]"}`,
		`{"trace_id": "0x` + tid + `", "span_id": "0x` + sid + `", "trace_state": "[a=b]"}`,
		`{"span_id": "0x` + sid + `", "trace_id": "0x` + tid + `"}`,
		`{"trace_id":"0x` + tid + `","span_id":"0x` + sid + `","trace_state":"[]"}`,
	} {
		line := `{"name": "x", "context": ` + ctx + `, "kind": "SpanKind.INTERNAL"}`
		cd := newConsoleDecoder(model.NewLocal(model.NewInterner()), Limits{})
		sp, trace, kind, err := cd.line([]byte(line))
		cd.release()
		if err != nil || kind != recSpan || trace.String() != tid || sp.SpanID.String() != sid {
			t.Errorf("%s: read %v %v, kind %v, %v", ctx, trace, sp.SpanID, kind, err)
		}
	}
	bad := `{"name": "x", "context": {"trace_id": "0x` + tid[:31] + `g", "span_id": "0x` + sid + `", "trace_state": "[]"}}`
	cd := newConsoleDecoder(model.NewLocal(model.NewInterner()), Limits{})
	defer cd.release()
	if _, _, _, err := cd.line([]byte(bad)); err == nil || !strings.Contains(err.Error(), "bad trace id") {
		t.Errorf("bad trace id read without the walk's error: %v", err)
	}
}
