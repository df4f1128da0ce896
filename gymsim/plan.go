package gymsim

import (
	"fmt"
	"math/rand/v2"
)

// Tools the resources server offers; run_code runs in a sandbox.
var tools = []string{"get_weather", "search_web", "run_code"}

// Verify outcomes: a reward of 1, a reward of 0, or the verifier raising.
const (
	verifyOK    = "ok"
	verifyZero  = "zero"
	verifyRaise = "raise"
)

// rolloutPlan is everything a rollout will do, drawn from the seed before it
// runs, so the shape does not depend on the spec or on scheduling.
type rolloutPlan struct {
	// ID is Gym's rollout id, <task>-<repeat>.
	ID    string
	Index int
	// Task and Repeat are Gym's _ng_task_index and _ng_rollout_index:
	// rollout Index is repeat Index%k of task Index/k, k rollouts per task.
	Task, Repeat int
	Turns        []turnPlan
	// Verify is verifyOK, verifyZero or verifyRaise; a raising verifier
	// fails the rollout (the agent's /run answers 500).
	Verify string
	// Work scales simulated latency per step, in [0.5, 1.5).
	Work []float64
}

type turnPlan struct {
	// Tools are called after the turn's model call; the last turn has none.
	Tools []toolPlan
}

type toolPlan struct {
	Name string
	// Fail: the tool raises and its server answers 500; the agent hands
	// the error to the model and goes on.
	Fail bool
	// ExitCode of run_code's command.
	ExitCode int
}

// taskOf splits rollout n into Gym's task and repeat indices, perTask
// rollouts per task (Gym's num_repeats: a task's repeats are dispatched one
// after the other).
func taskOf(n, perTask int) (task, repeat int) {
	if perTask < 1 {
		perTask = 1
	}
	return n / perTask, n % perTask
}

// rolloutID names rollout n as Gym does: "<task>-<repeat>".
func rolloutID(n, perTask int) string {
	task, repeat := taskOf(n, perTask)
	return fmt.Sprintf("%d-%d", task, repeat)
}

// planRollout draws rollout n's plan. Each rollout has its own generator
// seeded from (seed, n), so plans are identical however many rollouts run,
// in whatever order, under whatever spec; the repeats of a task are drawn
// each on their own, as a policy samples each attempt anew.
func planRollout(seed int64, n, perTask int) rolloutPlan {
	rng := rand.New(rand.NewPCG(uint64(seed), uint64(n)*0x9e3779b97f4a7c15+1))
	p := rolloutPlan{ID: rolloutID(n, perTask), Index: n}
	p.Task, p.Repeat = taskOf(n, perTask)
	nturns := 1 + rng.IntN(4)
	ntools := 0
	for t := 0; t < nturns; t++ {
		var tp turnPlan
		if t < nturns-1 {
			k := 1 + rng.IntN(2)
			for i := 0; i < k && ntools < 3; i++ {
				tool := toolPlan{Name: tools[rng.IntN(len(tools))], Fail: rng.Float64() < 0.1}
				if tool.Name == "run_code" && rng.Float64() < 0.3 {
					tool.ExitCode = 1
				}
				tp.Tools = append(tp.Tools, tool)
				ntools++
			}
		}
		p.Turns = append(p.Turns, tp)
	}
	switch x := rng.Float64(); {
	case x < 0.15:
		p.Verify = verifyRaise
	case x < 0.45:
		p.Verify = verifyZero
	default:
		p.Verify = verifyOK
	}
	p.Work = make([]float64, 16)
	for i := range p.Work {
		p.Work[i] = 0.5 + rng.Float64()
	}
	return p
}

// work returns the latency factor of step i of the rollout.
func (p *rolloutPlan) work(i int) float64 { return p.Work[i%len(p.Work)] }

// Failed reports whether the rollout's /run answers an error.
func (p *rolloutPlan) Failed() bool { return p.Verify == verifyRaise }

// requests is how many HTTP requests the rollout makes, whatever the spec:
// the driver's /run, seed_session, the agent's own /v1/responses, every
// model and tool call, and verify.
func (p *rolloutPlan) requests() int {
	n := 4
	for _, t := range p.Turns {
		n += 1 + len(t.Tools)
	}
	return n
}
