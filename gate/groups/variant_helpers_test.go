package groups

import "testing"

// g1c is the registry most tests were written against: G1's groups plus
// concurrency, whose metric they exercise.
func g1c() *Registry { return variant(nil, "G1c").Registry() }

func variant(t testing.TB, name string) *Variant {
	v, err := LookupVariant(name)
	if err != nil {
		if t == nil {
			panic(err)
		}
		t.Fatal(err)
	}
	return v
}

func mustParse(t testing.TB, spec string) Set {
	t.Helper()
	s, err := g1c().Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
