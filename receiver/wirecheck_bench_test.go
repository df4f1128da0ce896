package receiver

import "testing"

// BenchmarkWireOK is the check DecodeProto adds to every accepted request;
// compare with BenchmarkDecode/gym512/protowire.
func BenchmarkWireOK(b *testing.B) {
	gym := marshal(b, gymRequest(b))
	b.SetBytes(int64(len(gym)))
	for b.Loop() {
		if !wireOK(gym, traceRequestShape, 0) {
			b.Fatal("not ok")
		}
	}
}
