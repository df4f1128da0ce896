// Package gymsim runs a simulated NeMo Gym fleet that emits what Gym's real
// telemetry code emits, span for span and attribute for attribute: a driver
// (nemo-gym/orchestrator, or nemo-gym/supervisor in G3), an agent
// (simple_agent), a model server (policy_model) and a resources server
// (example_single_tool_call), each with its own OpenTelemetry
// TracerProvider and Gym's resource, talking real HTTP on loopback with W3C
// traceparent headers.
//
// Each process resolves its span_groups the way its Gym variant does
// (Variant: G1, G1c, G2, G3) and gates every span site, injection and
// extraction as Gym's call sites do: the FastAPI instrumentation only with
// server on, the egress CLIENT span (one per logical request, retries of
// connection errors inside, UNSET on error answers, ended when the headers
// arrive) only with http_client on; an unknown name switches telemetry off
// in G1 and is dropped from G2 on. A run is health probes, the rollouts
// under gym.job, and /aggregate_metrics; the switches real deployments have
// are there: observability (rollout ids, /ng-rollout/ prefixes), the aiohttp
// client instrumentation, a standalone driver, keep-alive context
// carry-over, and per-process span_groups (Config.ProcessSpecs).
//
// The fleet exports real OTLP (gRPC or HTTP) or Python-SDK console JSON
// lines, and can record every span it emitted as ground truth: its own
// bookkeeping of the rollout each request was made for, never what span
// attributes say, and never what a receiver stored. gymsim imports the
// OpenTelemetry SDK only; it must not import gate, model, receiver or tui.
//
// Rollout shapes are drawn from the seed per rollout, before execution and
// independently of the spec, so one seed under two specs produces the same
// rollouts with different spans.
package gymsim
