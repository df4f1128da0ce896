package receiver

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// jsonScanner reads one JSON document in a single pass, for decoders that
// walk a known schema. It validates everything it reads or skips as strict
// JSON (RFC 8259, UTF-8 only), and its syntax messages follow encoding/json's
// wording so errors read the same whichever decoder met them.
type jsonScanner struct {
	b []byte
	i int
	// depth counts the objects and arrays open at the cursor.
	depth int
	// vscr and kscr hold unescaped strings: values and object keys. A key
	// read does not disturb the value read before it.
	vscr, kscr []byte
	sscr       []byte // strings skipped
	fix        []byte // scratch for repairing an unescaped string
	// repaired counts strings that were not valid UTF-8 (see utf8.go).
	repaired int
}

// locError is an error at a byte offset of the document. Syntax errors are
// reported with their place only; content errors also get a field path.
type locError struct {
	off    int
	syntax bool
	err    error
}

func (e *locError) Error() string { return e.err.Error() }
func (e *locError) Unwrap() error { return e.err }

// errJSONEOF is encoding/json's message for a document that stops early.
var errJSONEOF = errors.New("unexpected end of JSON input")

// maxNesting bounds the nesting of objects and arrays, as encoding/json
// does, so a hostile document cannot recurse without end.
const maxNesting = 10000

func (s *jsonScanner) reset(b []byte) {
	s.b, s.i, s.depth, s.repaired = b, 0, 0, 0
}

// enter consumes the opening bracket at the cursor.
func (s *jsonScanner) enter() error {
	if s.depth >= maxNesting {
		return &locError{off: s.i, syntax: true, err: errors.New("exceeded max depth")}
	}
	s.depth++
	s.i++
	return nil
}

// synErr returns a syntax error at off: msg with the byte there quoted, or
// the end-of-input error when off is past the end.
func (s *jsonScanner) synErr(off int, msg string) error {
	if off >= len(s.b) {
		return &locError{off: len(s.b), syntax: true, err: errJSONEOF}
	}
	return &locError{off: off, syntax: true, err: fmt.Errorf("invalid character %s %s", quoteChar(s.b[off]), msg)}
}

// valErr returns a content error (valid JSON, wrong for OTLP) at off.
func (s *jsonScanner) valErr(off int, err error) error {
	return &locError{off: off, err: err}
}

// quoteChar formats c as encoding/json's syntax errors do.
func quoteChar(c byte) string {
	if c == '\'' {
		return `'\''`
	}
	if c == '"' {
		return `'"'`
	}
	q := strconv.Quote(string(rune(c)))
	return "'" + q[1:len(q)-1] + "'"
}

// lineCol turns a byte offset into a 1-based line and column.
func lineCol(b []byte, off int) (int, int) {
	off = min(off, len(b))
	line := 1 + bytes.Count(b[:off], []byte{'\n'})
	return line, off - bytes.LastIndexByte(b[:off], '\n')
}

// ws skips whitespace. Most calls find none, or one space: a byte above
// ' ' ends the loop with one comparison, on locals the compiler keeps in
// registers.
func (s *jsonScanner) ws() {
	b, i := s.b, s.i
	for i < len(b) && b[i] <= ' ' && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	s.i = i
}

// typeName names the JSON type of the value starting with c.
func typeName(c byte) string {
	switch c {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// wrongType skips the value at the cursor (so a syntax error in it wins) and
// reports that want was expected.
func (s *jsonScanner) wrongType(want string) error {
	start := s.i
	if err := s.skip(); err != nil {
		return err
	}
	return s.valErr(start, fmt.Errorf("want %s, got %s", want, typeName(s.b[start])))
}

// open consumes the opening bracket of an object ('{') or array ('['); null
// reports a null in its place. The cursor must be on the value.
func (s *jsonScanner) open(bracket byte) (null bool, err error) {
	if s.i >= len(s.b) {
		return false, s.synErr(s.i, "")
	}
	switch s.b[s.i] {
	case bracket:
		return false, s.enter()
	case 'n':
		return true, s.lit("null")
	}
	if bracket == '{' {
		return false, s.wrongType("an object")
	}
	return false, s.wrongType("an array")
}

// nextKey moves to the next member of an object whose '{' and n members have
// been read: it consumes the separator, the key and the colon and leaves the
// cursor on the value. ok is false at the closing brace.
func (s *jsonScanner) nextKey(n int) (key []byte, ok bool, err error) {
	s.ws()
	if s.i >= len(s.b) {
		return nil, false, s.synErr(s.i, "")
	}
	c := s.b[s.i]
	if c == '}' {
		s.i++
		s.depth--
		return nil, false, nil
	}
	if n > 0 {
		if c != ',' {
			return nil, false, s.synErr(s.i, "after object key:value pair")
		}
		s.i++
		s.ws()
		if s.i >= len(s.b) {
			return nil, false, s.synErr(s.i, "")
		}
		c = s.b[s.i]
	}
	if c != '"' {
		return nil, false, s.synErr(s.i, "looking for beginning of object key string")
	}
	key, err = s.str(&s.kscr)
	if err != nil {
		return nil, false, err
	}
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != ':' {
		return nil, false, s.synErr(s.i, "after object key")
	}
	s.i++
	s.ws()
	if s.i >= len(s.b) {
		return nil, false, s.synErr(s.i, "")
	}
	return key, true, nil
}

// nextElem moves to the next element of an array whose '[' and n elements
// have been read, leaving the cursor on it; ok is false at the closing bracket.
func (s *jsonScanner) nextElem(n int) (ok bool, err error) {
	s.ws()
	if s.i >= len(s.b) {
		return false, s.synErr(s.i, "")
	}
	c := s.b[s.i]
	if c == ']' && n == 0 {
		s.i++
		s.depth--
		return false, nil
	}
	if n == 0 {
		return true, nil
	}
	switch c {
	case ']':
		s.i++
		s.depth--
		return false, nil
	case ',':
		s.i++
		s.ws()
		if s.i >= len(s.b) {
			return false, s.synErr(s.i, "")
		}
		return true, nil
	}
	return false, s.synErr(s.i, "after array element")
}

// strSpecial marks the bytes that end the fast scan of a string: the quote,
// the backslash, control characters and non-ASCII bytes.
var strSpecial = func() (t [256]bool) {
	for c := range 256 {
		t[c] = c == '"' || c == '\\' || c < 0x20 || c >= utf8.RuneSelf
	}
	return t
}()

// hasStrSpecial reports whether a word of eight string bytes may hold one
// that strSpecial marks. The zero-byte test (x-0x01…)&^x&0x80… flags every
// byte equal to the one sought; it may also flag a byte above a true match,
// which only ends the fast scan early.
func hasStrSpecial(w uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	q := w ^ (ones * '"')
	bs := w ^ (ones * '\\')
	return ((q-ones)&^q|(bs-ones)&^bs|(w-ones*0x20)&^w|w)&highs != 0
}

// str reads the string at the cursor. Without escapes the result aliases the
// document; otherwise it is unescaped into *scr. Invalid UTF-8 is repaired
// into *scr and counted (see utf8.go); a lone surrogate escape becomes
// U+FFFD.
func (s *jsonScanner) str(scr *[]byte) ([]byte, error) {
	b := s.b
	start := s.i + 1
	ascii := true
	i := start
	// Eight bytes at a time up to the first word holding a quote, a
	// backslash, a control character or a non-ASCII byte (or a false
	// alarm past one), then byte by byte.
	for i+8 <= len(b) && !hasStrSpecial(binary.LittleEndian.Uint64(b[i:])) {
		i += 8
	}
	for ; i < len(b); i++ {
		c := b[i]
		if !strSpecial[c] {
			continue
		}
		switch {
		case c == '"':
			v := b[start:i]
			if !ascii {
				v = repairUTF8(v, scr, &s.repaired)
			}
			s.i = i + 1
			return v, nil
		case c == '\\':
			return s.strEscaped(scr, start, i, ascii)
		case c < 0x20:
			return nil, s.synErr(i, "in string literal")
		}
		ascii = false
	}
	return nil, s.synErr(len(b), "")
}

// strEscaped finishes a string that has escapes, from the first backslash at i.
func (s *jsonScanner) strEscaped(scr *[]byte, start, i int, ascii bool) ([]byte, error) {
	b := s.b
	out := append((*scr)[:0], b[start:i]...)
	defer func() { *scr = out }()
	for i < len(b) {
		c := b[i]
		switch {
		case c == '"':
			if !ascii && !utf8.Valid(out) {
				out = append(out[:0], repairUTF8(out, &s.fix, &s.repaired)...)
			}
			s.i = i + 1
			return out, nil
		case c == '\\':
			if i+1 >= len(b) {
				return nil, s.synErr(len(b), "")
			}
			e := b[i+1]
			i += 2
			switch e {
			case '"', '\\', '/':
				out = append(out, e)
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r, err := s.hex4(i)
				if err != nil {
					return nil, err
				}
				i += 4
				if utf16.IsSurrogate(r) {
					r2 := rune(-1)
					if i+1 < len(b) && b[i] == '\\' && b[i+1] == 'u' {
						if r2, err = s.hex4(i + 2); err != nil {
							return nil, err
						}
					}
					if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
						out = utf8.AppendRune(out, dec)
						i += 6
						continue
					}
					r = utf8.RuneError
				}
				out = utf8.AppendRune(out, r)
			default:
				return nil, s.synErr(i-1, "in string escape code")
			}
		case c < 0x20:
			return nil, s.synErr(i, "in string literal")
		default:
			if c >= utf8.RuneSelf {
				ascii = false
			}
			out = append(out, c)
			i++
		}
	}
	return nil, s.synErr(len(b), "")
}

// hex4 reads the four hex digits of a \u escape at i.
func (s *jsonScanner) hex4(i int) (rune, error) {
	var r rune
	for k := i; k < i+4; k++ {
		if k >= len(s.b) {
			return 0, s.synErr(len(s.b), "")
		}
		v := unhex[s.b[k]]
		if v == 0xff {
			return 0, s.synErr(k, `in \u hexadecimal character escape`)
		}
		r = r<<4 | rune(v)
	}
	return r, nil
}

// unhex maps a hex digit (either case) to its value, anything else to 0xff.
var unhex = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = byte(c - '0')
	}
	for c := 'a'; c <= 'f'; c++ {
		t[c] = byte(c - 'a' + 10)
		t[c-'a'+'A'] = byte(c - 'a' + 10)
	}
	return t
}()

// number reads a number token and returns its text.
func (s *jsonScanner) number() ([]byte, error) {
	b := s.b
	start, i := s.i, s.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	digits := func(i int) int {
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i
	}
	switch {
	case i >= len(b):
		return nil, s.synErr(i, "")
	case b[i] == '0':
		i++
	case b[i] >= '1' && b[i] <= '9':
		i = digits(i + 1)
	default:
		return nil, s.synErr(i, "in numeric literal")
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return nil, s.synErr(i, "after decimal point in numeric literal")
		}
		i = digits(i)
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return nil, s.synErr(i, "in exponent of numeric literal")
		}
		i = digits(i)
	}
	s.i = i
	return b[start:i], nil
}

// lit consumes the literal w (true, false or null) at the cursor.
func (s *jsonScanner) lit(w string) error {
	for k := 0; k < len(w); k++ {
		j := s.i + k
		if j >= len(s.b) {
			return s.synErr(j, "")
		}
		if s.b[j] != w[k] {
			return s.synErr(j, fmt.Sprintf("in literal %s (expecting %s)", w, quoteChar(w[k])))
		}
	}
	s.i += len(w)
	return nil
}

// boolean reads true, false or null (false).
func (s *jsonScanner) boolean() (bool, error) {
	switch s.b[s.i] {
	case 't':
		return true, s.lit("true")
	case 'f':
		return false, s.lit("false")
	case 'n':
		return false, s.lit("null")
	}
	return false, s.wrongType("a boolean")
}

// skip consumes one value of any type, checking it is valid JSON.
func (s *jsonScanner) skip() error {
	if s.i >= len(s.b) {
		return s.synErr(s.i, "")
	}
	switch c := s.b[s.i]; c {
	case '{', '[':
		if err := s.enter(); err != nil {
			return err
		}
		if c == '{' {
			for n := 0; ; n++ {
				_, ok, err := s.nextKey(n)
				if err != nil || !ok {
					return err
				}
				if err := s.skip(); err != nil {
					return err
				}
			}
		}
		for n := 0; ; n++ {
			ok, err := s.nextElem(n)
			if err != nil || !ok {
				return err
			}
			if err := s.skip(); err != nil {
				return err
			}
		}
	case '"':
		_, err := s.str(&s.sscr)
		return err
	case 't':
		return s.lit("true")
	case 'f':
		return s.lit("false")
	case 'n':
		return s.lit("null")
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		_, err := s.number()
		return err
	}
	return s.synErr(s.i, "looking for beginning of value")
}

// scalar reads a value given as a number or a string, the two ways the
// protobuf JSON mapping writes numbers. It returns the number's text (the
// string unescaped), the value's raw JSON for messages, and null for null.
// Other types are skipped and returned with ok false.
func (s *jsonScanner) scalar() (txt, raw []byte, isStr, null, ok bool, err error) {
	start := s.i
	switch c := s.b[s.i]; {
	case c == '"':
		txt, err = s.str(&s.vscr)
		return txt, s.b[start:s.i], true, false, err == nil, err
	case c == '-' || c >= '0' && c <= '9':
		txt, err = s.number()
		return txt, txt, false, false, err == nil, err
	case c == 'n':
		err = s.lit("null")
		return nil, nil, false, true, err == nil, err
	}
	if err := s.skip(); err != nil {
		return nil, nil, false, false, false, err
	}
	return nil, s.b[start:s.i], false, false, false, nil
}
