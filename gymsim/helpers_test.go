package gymsim

import (
	"context"
	"testing"
	"time"
)

// runFleet runs cfg to completion and shuts the fleet down.
func runFleet(t *testing.T, cfg Config) *Fleet {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	f, err := Start(ctx, cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	f.Wait()
	if err := f.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if st := f.Stats(); st.Completed != int64(cfg.Rollouts) {
		t.Fatalf("completed %d rollouts, want %d", st.Completed, cfg.Rollouts)
	}
	return f
}
