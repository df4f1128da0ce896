package rollouts

// LeakReason is the broken-hop reason of a request span created INTERNAL
// under another request's span.
const LeakReason = "request span created INTERNAL under another request's span: request context carried over on a reused keep-alive connection (a server-side context leak, not a span_groups setting)"

// IsContextLeak reports whether a broken hop's reason is a request context
// carried over on a reused connection: structure re-roots such a span into
// its own rollout, so it is a finding about the server, not a join break.
func IsContextLeak(reason string) bool { return reason == LeakReason }
