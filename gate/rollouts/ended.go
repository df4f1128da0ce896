package rollouts

// RunEnded reports whether a span that ends a run has arrived: gym.job (it is
// exported when the run ends), /aggregate_metrics (called once the rollouts
// are in), or the root of a caller's spans above the rollouts.
func (s *Structure) RunEnded() bool {
	for _, p := range s.Run {
		switch p.Kind {
		case RunJob, RunAggregate:
			return true
		case RunCaller:
			if p.Frag.TopParent.IsZero() {
				return true
			}
		}
	}
	return false
}
