// Package receiver turns OTLP traffic and captured files into batches of
// model spans: the OTLP/gRPC and OTLP/HTTP servers (with backpressure, auth
// and size bounds), the --record writer, and the decoders and file readers
// they share.
//
// Handlers decode on their own goroutines and hand each batch to the
// model.Store without blocking; a full store is answered with a retryable
// status so exporters back off instead of losing spans.
//
// receiver imports model, grpc and the OTLP protobuf types. It must not import
// gate or tui: data flows one way, receiver → model → gate → tui.
package receiver
