// Package gymsim runs a simulated NeMo Gym fleet: a rollout-collection driver,
// an agent server, a model server and a resources server, each with its own
// OpenTelemetry TracerProvider and resource, talking real HTTP on loopback
// with W3C traceparent headers, and gating every span site with a span_groups
// set exactly as Gym's call sites do. Each process may run its own set
// (Config.ProcessSpecs), as each Gym process reads its own config: the way
// cross-process joins break in practice.
//
// The fleet exports real OTLP (gRPC or HTTP) or Python-SDK console JSON lines,
// and can record every span it emitted as ground truth. Its truth is what it
// sent, never what a receiver stored: gymsim imports the OpenTelemetry SDK and
// gate (for the spec and the Group constants) and must not import model,
// receiver or tui.
//
// Rollout shapes are drawn from the seed per rollout, before execution and
// independently of the spec, so one seed under two specs produces the same
// rollouts with different spans.
package gymsim
