package receiver

import (
	"flag"
	"io"
	"os"
	"testing"

	"github.com/nemo-gym/gymtrace/model"
)

var consoleOut = flag.String("console-out", "", "write a console log of -console-spans spans (the fixture repeated, one trace id per copy) to this file, for timing `gymtrace open`")

// TestWriteConsoleLog writes the long console log that the open benchmark
// reads, so the command itself can be timed on it. It does nothing unless
// -console-out is given; the file is never kept in the repository.
func TestWriteConsoleLog(t *testing.T) {
	if *consoleOut == "" {
		t.Skip("no -console-out")
	}
	stream, spans := newConsoleStream(t, *consoleSpans)
	f, err := os.Create(*consoleOut)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(f, stream); err != nil {
		f.Close()
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	// Read it back as `gymtrace open` would: every span must load.
	st := model.NewStore(model.Options{})
	defer st.Close()
	rep, err := ReadFiles(st, []string{*consoleOut}, ReadOptions{})
	st.Sync()
	if err != nil || rep.Spans != spans || st.Snapshot().Stats.Stored != spans {
		t.Fatalf("read back %d spans (stored %d), %v; want %d", rep.Spans, st.Snapshot().Stats.Stored, err, spans)
	}
	t.Logf("wrote %s: %d spans", *consoleOut, spans)
}
