package main

import (
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpenBinaryFileSaysItOnce opens a file of random bytes: the cause is
// printed once, with the file's name, and open exits 2.
func TestOpenBinaryFileSaysItOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "random.bin")
	b := make([]byte, 5000)
	rand.New(rand.NewSource(1)).Read(b)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr syncBuffer
	if code := runOpen([]string{"--text", path}, &stdout, &stderr, false); code != exitUsage {
		t.Errorf("exit %d, want %d", code, exitUsage)
	}
	out := stderr.String()
	cause := path + ": protobuf request:"
	if n := strings.Count(out, cause); n != 1 {
		t.Errorf("the cause %q is printed %d times, want once:\n%s", cause, n, out)
	}
	if !strings.Contains(out, "gymtrace open: no spans in "+path) {
		t.Errorf("no verdict naming the file:\n%s", out)
	}
}
