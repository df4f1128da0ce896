package evidence

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// File is one file read: its path, what it is, and what it held.
type File struct {
	Path string
	Kind Kind
	Rows int // rows read (lines, or entries of a JSON document)
	Bad  int // lines skipped as malformed
}

// BadLine is a line that could not be read, and why.
type BadLine struct {
	Path   string
	Line   int
	Reason string
}

func (b BadLine) String() string { return fmt.Sprintf("%s:%d: %s", b.Path, b.Line, b.Reason) }

// maxBadSamples bounds the malformed lines kept by name; all are counted.
const maxBadSamples = 20

// maxDoc bounds a whole-document file (aggregate metrics, quality summary).
const maxDoc = 64 << 20

// Reader reads evidence files and, called again, what they gained since:
// beside a live job Gym appends to its files as rollouts complete. A
// directory is walked (to depth 3: model-call captures sit in a folder of
// their own), its .jsonl, .json and .gz files taken, those that are not
// Gym's evidence said and skipped; a directory read again picks up files
// that are new. A Reader is not safe for concurrent use; the Sets it
// returns are immutable.
type Reader struct {
	paths []string
	files map[string]*tail
	order []string
	b     builder
	bad   []BadLine
	nbad  int
}

type tail struct {
	path     string
	explicit bool // named on the command line, not found in a folder
	gz       bool
	doc      bool // a whole JSON document, read again when it changes
	kind     Kind
	off      int64 // bytes consumed (complete lines)
	line     int   // lines consumed
	size     int64
	rows     int
	bad      int
	idx      int16 // index in Set.Files
	fileName string
}

// NewReader returns a reader of paths (files or directories).
func NewReader(paths ...string) *Reader {
	return &Reader{paths: paths, files: map[string]*tail{}, b: newBuilder()}
}

// Read reads every path once and returns what they hold. An error is a path
// that cannot be read at all; a malformed line is skipped and named.
func Read(paths ...string) (*Set, error) {
	r := NewReader(paths...)
	s, _, err := r.Poll()
	return s, err
}

// Poll reads what is new in the paths and returns the evidence so far;
// changed is false when nothing new was read (s is then the last Set).
func (r *Reader) Poll() (s *Set, changed bool, err error) {
	for _, p := range r.paths {
		if err := r.discover(p); err != nil {
			return r.b.last, false, err
		}
	}
	for _, p := range r.order {
		t := r.files[p]
		n, err := r.readNew(t)
		if err != nil {
			return r.b.last, false, err
		}
		changed = changed || n
	}
	if r.b.last == nil || changed {
		r.b.last = r.b.snapshot(r)
		changed = true
	}
	return r.b.last, changed, nil
}

func (r *Reader) discover(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return fmt.Errorf("evidence %s: %w", p, unwrapPathErr(err))
	}
	if !fi.IsDir() {
		r.add(p, true)
		return nil
	}
	root := filepath.Clean(p)
	var found []string
	err = filepath.WalkDir(root, func(q string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // a folder that vanished or cannot be listed: skip it
		}
		if d.IsDir() {
			if q != root && strings.Count(strings.TrimPrefix(q, root), string(filepath.Separator)) > 3 {
				return filepath.SkipDir
			}
			return nil
		}
		name := strings.TrimSuffix(d.Name(), ".gz")
		if strings.HasSuffix(name, ".jsonl") || strings.HasSuffix(name, ".json") {
			found = append(found, q)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("evidence %s: %w", p, err)
	}
	sort.Strings(found)
	for _, q := range found {
		r.add(q, false)
	}
	return nil
}

func unwrapPathErr(err error) error {
	var pe *fs.PathError
	if e, ok := err.(*fs.PathError); ok {
		pe = e
		return pe.Err
	}
	return err
}

func (r *Reader) add(p string, explicit bool) {
	if _, ok := r.files[p]; ok {
		return
	}
	base := filepath.Base(p)
	t := &tail{path: p, explicit: explicit, gz: strings.HasSuffix(base, ".gz"), idx: int16(min(len(r.order), math.MaxInt16)),
		fileName: strings.TrimSuffix(base, ".gz")}
	r.files[p] = t
	r.order = append(r.order, p)
}

// readNew reads what the file gained since last time.
func (r *Reader) readNew(t *tail) (bool, error) {
	fi, err := os.Stat(t.path)
	if err != nil {
		if t.explicit {
			return false, fmt.Errorf("evidence %s: %w", t.path, unwrapPathErr(err))
		}
		return false, nil
	}
	if fi.Size() == t.size {
		return false, nil
	}
	// A document (aggregate metrics, a quality summary) is rewritten whole,
	// shorter as well as longer, and read whole each time; lines that
	// shrank were rewritten under us, and what they held is kept.
	if fi.Size() < t.size && !t.doc {
		return false, fmt.Errorf("evidence %s: the file shrank from %d to %d bytes while being read (rewritten?)", t.path, t.size, fi.Size())
	}
	f, err := os.Open(t.path)
	if err != nil {
		return false, fmt.Errorf("evidence %s: %w", t.path, unwrapPathErr(err))
	}
	defer f.Close()
	var in io.Reader = f
	if t.gz {
		// A compressed file is read whole, once it stops growing.
		if t.size > 0 {
			return false, nil
		}
		zr, err := gzip.NewReader(f)
		if err != nil {
			return false, fmt.Errorf("evidence %s: %w", t.path, err)
		}
		defer zr.Close()
		in = zr
	} else if t.off > 0 && !t.doc {
		if _, err := f.Seek(t.off, io.SeekStart); err != nil {
			return false, fmt.Errorf("evidence %s: %w", t.path, err)
		}
	}
	size := fi.Size()
	if t.doc || t.kind == NotEvidence && t.off == 0 && looksLikeDoc(f, t) {
		t.doc = true
		return r.readDoc(t, in, size)
	}
	return r.readLines(t, in, size)
}

// looksLikeDoc peeks whether a file holds one JSON document (Gym's
// aggregate metrics and quality summary, pretty-printed) and not lines.
func looksLikeDoc(f *os.File, t *tail) bool {
	if t.gz {
		return strings.HasSuffix(t.fileName, ".json")
	}
	var head [4096]byte
	n, _ := f.ReadAt(head[:], 0)
	b := bytes.TrimLeft(head[:n], " \t\r\n\ufeff")
	if len(b) == 0 {
		return false
	}
	if b[0] == '[' {
		return true
	}
	// A JSON-lines file has a whole object on its first line.
	first := b
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		first = b[:i]
	} else if n == len(head) {
		return false
	}
	return b[0] == '{' && !json.Valid(bytes.TrimSpace(first))
}

func (r *Reader) readDoc(t *tail, in io.Reader, size int64) (bool, error) {
	body, err := io.ReadAll(io.LimitReader(in, maxDoc+1))
	if err != nil {
		return false, fmt.Errorf("evidence %s: %w", t.path, err)
	}
	if len(body) > maxDoc {
		return false, fmt.Errorf("evidence %s: a JSON document over %d MiB", t.path, maxDoc>>20)
	}
	t.size = size
	if !json.Valid(body) {
		// Written as we read it, perhaps: try again when it changes.
		if t.explicit && t.kind == NotEvidence {
			t.bad = 1
		}
		return false, nil
	}
	t.kind, t.rows = r.b.doc(body, t)
	t.bad = 0
	return true, nil
}

// readLines reads complete lines. A last line without its newline is
// taken only when it is a whole JSON value (a finished file may end so); a
// line still being written waits for the next poll.
func (r *Reader) readLines(t *tail, in io.Reader, size int64) (bool, error) {
	br := bufio.NewReaderSize(in, 256<<10)
	changed := false
	var long []byte // a line longer than the buffer, gathered
	for {
		part, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			long = append(long, part...)
			continue
		}
		line := part
		if long != nil {
			long = append(long, part...)
			line = long
		}
		if err == nil {
			r.line(t, line[:len(line)-1])
			t.off += int64(len(line))
			changed = true
			long = nil
			continue
		}
		if err != io.EOF {
			return changed, fmt.Errorf("evidence %s: %w", t.path, err)
		}
		if len(line) > 0 && (t.gz || json.Valid(bytes.TrimSpace(line))) {
			r.line(t, line)
			t.off += int64(len(line))
			changed = true
		}
		break
	}
	t.size = t.off
	if t.gz {
		t.size = size
	}
	return changed, nil
}

// line reads one line of a JSON-lines file.
func (r *Reader) line(t *tail, raw []byte) {
	t.line++
	raw = bytes.TrimSpace(raw)
	if t.line == 1 {
		raw = bytes.TrimPrefix(raw, []byte("\ufeff"))
	}
	if len(raw) == 0 {
		return
	}
	if t.kind == NotEvidence {
		keys := map[string]bool{}
		if eachField(raw, func(k, _ []byte) error { keys[string(k)] = true; return nil }) != nil {
			if t.line <= 5 {
				r.badLine(t, "not a JSON object")
			}
			return
		}
		if t.kind = lineKind(keys); t.kind == NotEvidence {
			return
		}
	}
	if err := r.b.row(t, raw); err != nil {
		r.badLine(t, err.Error())
		return
	}
	t.rows++
}

func (r *Reader) badLine(t *tail, reason string) {
	t.bad++
	r.nbad++
	if len(r.bad) < maxBadSamples {
		r.bad = append(r.bad, BadLine{Path: t.path, Line: t.line, Reason: reason})
	}
}
