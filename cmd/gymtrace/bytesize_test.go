package main

import (
	"strings"
	"testing"
)

func TestParseByteSize(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
		err  string
	}{
		{in: "67108864", want: 64 << 20},
		{in: "64MiB", want: 64 << 20},
		{in: "64mib", want: 64 << 20},
		{in: "64MB", want: 64_000_000},
		{in: "1.5GB", want: 1_500_000_000},
		{in: "4 KiB", want: 4096},
		{in: "100B", want: 100},
		{in: "0", want: 0},
		{in: "64M", err: `unknown unit "m"`},
		{in: "MiB", err: "is not a number"},
		{in: "-1MiB", err: "is not a number"},
	} {
		got, err := parseByteSize(c.in)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("parseByteSize(%q) = %d, %v; want an error with %q", c.in, got, err, c.err)
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("parseByteSize(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
}

// TestServeByteSizeFlags: serve's byte-size flags take units, as --budget
// does, and -h shows their defaults with units.
func TestServeByteSizeFlags(t *testing.T) {
	var stdout, stderr syncBuffer
	_, f, _, done := parseServeFlags([]string{"--max-bytes", "64MiB", "--max-recv-bytes", "64MB", "--max-decompressed-bytes", "32MiB",
		"--max-value-len", "8KiB", "--max-inflight-bytes", "16MiB"}, &stdout, &stderr)
	if done {
		t.Fatalf("flags refused: %s", stderr.String())
	}
	if f.MaxBytes != 64<<20 || f.MaxRecvBytes != 64_000_000 || f.MaxDecompressed != 32<<20 || f.Limits.MaxValueLen != 8<<10 || f.MaxInflight != 16<<20 {
		t.Errorf("parsed %d %d %d %d %d", f.MaxBytes, f.MaxRecvBytes, f.MaxDecompressed, f.Limits.MaxValueLen, f.MaxInflight)
	}
	stderr = syncBuffer{}
	if _, _, code, done := parseServeFlags([]string{"--max-bytes", "64 parsecs"}, &stdout, &stderr); !done || code != exitUsage ||
		!strings.Contains(stderr.String(), `invalid value "64 parsecs" for flag -max-bytes`) || !strings.Contains(stderr.String(), "e.g. 64MiB") {
		t.Errorf("a bad unit: done %v code %d:\n%s", done, code, stderr.String())
	}
	stdout = syncBuffer{}
	parseServeFlags([]string{"-h"}, &stdout, &stderr)
	if !strings.Contains(stdout.String(), "(default 64MiB)") {
		t.Errorf("-h does not show --max-recv-bytes' default with its unit:\n%s", stdout.String())
	}
}
