// Package testfile reads the gzipped captures that tests of several
// packages compare against (real-Gym console logs and truth files).
package testfile

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"runtime/pprof"
	"testing"
)

// Gunzip returns the decompressed content of the gzip file at path,
// failing the test on any error.
func Gunzip(tb testing.TB, path string) []byte {
	tb.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	return b
}

// Lines returns the lines of the gzip file at path, without their
// newlines; a last empty line is left out.
func Lines(tb testing.TB, path string) [][]byte {
	tb.Helper()
	b := Gunzip(tb, path)
	b = bytes.TrimSuffix(b, []byte("\n"))
	if len(b) == 0 {
		return nil
	}
	return bytes.Split(b, []byte("\n"))
}

// HeapProfile writes the heap profile as of the last collection to path,
// for a benchmark's flag that asks for one (read it with go tool pprof
// -sample_index=inuse_space).
func HeapProfile(tb testing.TB, path string) {
	tb.Helper()
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	if err := pprof.WriteHeapProfile(f); err != nil {
		tb.Fatal(err)
	}
}
