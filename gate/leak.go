package gate

// IsContextLeak reports whether a broken hop's reason is a request context
// carried over on a reused connection: structure re-roots such a span into
// its own rollout, so it is a finding about the server, not a join break.
func IsContextLeak(reason string) bool { return reason == reasonLeak }
