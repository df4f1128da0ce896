package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// stopSignals end serve and demo: Ctrl-C, kill, and the terminal closing
// (SIGHUP: an SSH session dropped, a tmux pane killed). Each one stops the
// receivers in order; every acknowledged span is in --record already.
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

// signalContext is a context ended by the first of stopSignals.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), stopSignals...)
}

// shutdownDeadline bounds an orderly stop, a net under the receivers' own
// bound (about 2 s): whatever blocks, the process does not stay alive and
// deaf to signals.
var shutdownDeadline = 10 * time.Second

// stopNotice is how long a stop may take before it says what it waits for:
// past the receivers' own bound, so something is wrong.
const stopNotice = 3 * time.Second

// errAbandoned means the stop was given up: see the message printed.
var errAbandoned = errors.New("shutdown abandoned")

// stopBounded stops the receivers like stop, but gives up at a second stop
// signal or after shutdownDeadline, printing what the record writer had
// not written; the caller then returns and the process exits.
func (r *runningReceivers) stopBounded(stderr io.Writer) error {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, stopSignals...)
	defer signal.Stop(sig)
	done := make(chan error, 1)
	go func() { done <- r.stop() }()
	t := time.NewTimer(shutdownDeadline)
	defer t.Stop()
	// A stop that takes long says why and how to cut it short, so a user
	// whose Ctrl-C seems ignored knows what is going on.
	notice := time.NewTimer(stopNotice)
	defer notice.Stop()
	var why string
wait:
	for {
		select {
		case err := <-done:
			return err
		case <-notice.C:
			if st := r.Server.Stats(); st.UnwrittenRequests > 0 {
				fmt.Fprintf(stderr, "gymtrace: stopping: the record writer still holds %d spans (not acknowledged); signal again to exit now (or it will in %s)\n",
					st.UnwrittenSpans, (shutdownDeadline - stopNotice).Round(time.Second))
			} else {
				fmt.Fprintf(stderr, "gymtrace: stopping: requests still in flight; signal again to exit now (or it will in %s)\n",
					(shutdownDeadline - stopNotice).Round(time.Second))
			}
		case s := <-sig:
			why = "second signal (" + s.String() + ")"
			break wait
		case <-t.C:
			why = fmt.Sprintf("still stopping after %s", shutdownDeadline)
			break wait
		}
	}
	st := r.Server.Stats()
	if st.UnwrittenRequests > 0 {
		fmt.Fprintf(stderr, "gymtrace: %s: exiting with %d spans (%d requests) not written to the record, none acknowledged: its writer is blocked\n",
			why, st.UnwrittenSpans, st.UnwrittenRequests)
	} else {
		fmt.Fprintf(stderr, "gymtrace: %s: exiting before the receivers finished stopping\n", why)
	}
	return errAbandoned
}
