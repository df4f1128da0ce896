package gate

// Rule classifies spans into a group. First match wins, in registry order of
// rules. Fields left empty match anything.
type Rule struct {
	Group Group
	// Name matches the span name exactly; Prefix matches its start.
	Name   string
	Prefix string
	// Suffix matches the end of the span name.
	Suffix string
	// Kind matches the span kind ("SERVER", "CLIENT", "INTERNAL"); empty = any.
	Kind string
}

func defaultRules() []Rule { return nil }
