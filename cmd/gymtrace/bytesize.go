package main

import (
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// byteUnits are the units a byte-size flag takes, the same as a --budget's
// bytes: decimal (KB = 1000) and binary (KiB = 1024).
var byteUnits = map[string]float64{
	"": 1, "b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
}

// parseByteSize reads a byte size: a number and an optional unit (B, KB,
// MB, GB, TB, KiB, MiB, GiB, TiB; none means bytes), e.g. 64MiB, 1.5GB,
// 67108864.
func parseByteSize(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.' || i == 0 && (t[i] == '-' || t[i] == '+')) {
		i++
	}
	num, unit := t[:i], strings.TrimSpace(t[i:])
	mul, ok := byteUnits[unit]
	if !ok {
		return 0, fmt.Errorf("%q: unknown unit %q (want a number of bytes, or one with B, KB, MB, GB, TB, KiB, MiB, GiB or TiB, e.g. 64MiB)", s, t[i:])
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%q: %q is not a number >= 0 (want e.g. 64MiB or 67108864)", s, num)
	}
	n := math.Round(v * mul)
	if n > math.MaxInt64/2 {
		return 0, fmt.Errorf("%q: too large", s)
	}
	return int64(n), nil
}

// formatByteSize writes n in the largest binary unit that divides it, so
// -h shows 64MiB rather than 67108864.
func formatByteSize(n int64) string {
	for _, u := range []struct {
		name string
		size int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10)
}

// byteSizeFlag is a flag.Value holding a byte size in an int64.
type byteSizeFlag struct{ p *int64 }

func (f byteSizeFlag) String() string {
	if f.p == nil {
		return ""
	}
	return formatByteSize(*f.p)
}

func (f byteSizeFlag) Set(s string) error {
	n, err := parseByteSize(s)
	if err != nil {
		return err
	}
	*f.p = n
	return nil
}

// intByteSizeFlag is byteSizeFlag for an int.
type intByteSizeFlag struct{ p *int }

func (f intByteSizeFlag) String() string {
	if f.p == nil {
		return ""
	}
	return formatByteSize(int64(*f.p))
}

func (f intByteSizeFlag) Set(s string) error {
	n, err := parseByteSize(s)
	if err != nil {
		return err
	}
	if n > math.MaxInt32 {
		return fmt.Errorf("%q: at most 2GiB", s)
	}
	*f.p = int(n)
	return nil
}

// byteSizeVar defines a byte-size flag with the default value.
func byteSizeVar(fs *flag.FlagSet, p *int64, name string, value int64, usage string) {
	*p = value
	fs.Var(byteSizeFlag{p}, name, usage)
}

// intByteSizeVar defines a byte-size flag held in an int.
func intByteSizeVar(fs *flag.FlagSet, p *int, name string, value int, usage string) {
	*p = value
	fs.Var(intByteSizeFlag{p}, name, usage)
}
