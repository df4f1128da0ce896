// Package e2e holds end-to-end tests: the simulated fleet exports real OTLP
// to the real receivers, and what the store holds and what the what-if
// engine predicts are compared with what the fleet says it emitted.
//
// The package has no code of its own; it is the only place that imports
// gymsim together with model, receiver and gate.
package e2e
