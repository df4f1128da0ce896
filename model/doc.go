// Package model holds gymtrace's in-memory view of received spans: the compact
// span type, the string and resource interner, the span store with its single
// writer, per-rollout trees and the immutable snapshots readers work from.
//
// model knows nothing about OTLP, span groups or the terminal: it imports the
// standard library only. Receivers build Batches of Spans and Submit them; the
// gate and the TUI read Snapshots and never mutate them.
package model
