package main

import (
	"fmt"
	"os"

	"github.com/nemo-gym/gymtrace/gate"
	"github.com/nemo-gym/gymtrace/model"
)

// uiConfig is what every TUI-opening command hands runUI.
type uiConfig struct {
	Store       *model.Store
	Registry    *gate.Registry
	Current     gate.Set // the span_groups setting in force, to preview against
	CurrentSpec string
	Addrs       []string // receiver addresses for the header; empty for files
	Live        bool     // spans may still arrive: fresh rollouts are pending
	Title       string
}

// runUI opens the interactive view and returns when the user quits.
func runUI(cfg uiConfig) error {
	cfg.Store.Sync()
	s := cfg.Store.Snapshot()
	fmt.Fprintf(os.Stdout, "spans=%d rollouts=%d traces=%d\n", s.Stats.Stored, s.Stats.Rollouts, s.Stats.Traces)
	return nil
}
