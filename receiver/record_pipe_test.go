package receiver

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nemo-gym/gymtrace/model"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// TestRecordToFIFO records into a FIFO read by another process's end (as
// `serve --record /dev/stdout | …` does): every span reaches the reader and
// shutting down is clean, though a FIFO cannot be synced.
func TestRecordToFIFO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rec.fifo")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	read := make(chan string, 1)
	go func() {
		f, err := os.Open(path)
		if err != nil {
			read <- "open: " + err.Error()
			return
		}
		defer f.Close()
		b, _ := io.ReadAll(f)
		read <- string(b)
	}()
	srv, _ := startServer(t, Config{RecordPath: path}, model.Options{})
	const n = 300
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(newExporter(t, srv, transports[1], nil), sdktrace.WithMaxExportBatchSize(64)))
	tr := tp.Tracer("fifo")
	for i := 0; i < n; i++ {
		_, sp := tr.Start(context.Background(), "op")
		sp.End()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tp.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown with a FIFO record: %v", err)
	}
	select {
	case text := <-read:
		if got := strings.Count(text, `"spanId"`); got != n {
			t.Errorf("the FIFO's reader got %d spans, want %d", got, n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the FIFO's reader never saw the end of the record")
	}
}
