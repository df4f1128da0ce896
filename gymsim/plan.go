package gymsim

import (
	"fmt"
	"math/rand/v2"
)

// Model APIs a rollout may use; each is a route on the model server and names
// the gym.model.* span.
var modelAPIs = []struct {
	route, span string
}{
	{"/v1/responses", "gym.model.responses"},
	{"/v1/chat/completions", "gym.model.chat_completions"},
	{"/v1/messages", "gym.model.messages"},
}

// Tools the resources server offers; run_code is sandboxed.
var tools = []string{"get_weather", "search_web", "run_code"}

// rolloutPlan is everything a rollout will do, drawn from the seed before it
// runs, so the shape does not depend on the spec or on scheduling.
type rolloutPlan struct {
	ID    string
	Index int
	API   int // index into modelAPIs
	Turns []turnPlan
	// SandboxFail: the last run_code call raises; the rollout ends there
	// (no later turns, no verify).
	SandboxFail bool
	VerifyFail  bool
	Reward      float64
	// Work scales simulated latency per step, in [0.5, 1.5).
	Work []float64
}

type turnPlan struct {
	Model503 int // 503 answers before the model call succeeds
	Tools    []toolPlan
	Input    int // prompt tokens
	Output   int // completion tokens
}

type toolPlan struct {
	Name    string
	Fail503 int // 503 answers before the call succeeds
}

// maxAttempts bounds the agent's retries of a 503; plans never exceed it.
const maxAttempts = 3

// rolloutID names rollout n of a fleet seeded with seed.
func rolloutID(seed int64, n int) string { return fmt.Sprintf("r-%d-%04d", seed, n) }

// planRollout draws rollout n's plan. Each rollout has its own generator
// seeded from (seed, n), so plans are identical however many rollouts run,
// in whatever order, under whatever spec.
func planRollout(seed int64, n int) rolloutPlan {
	rng := rand.New(rand.NewPCG(uint64(seed), uint64(n)*0x9e3779b97f4a7c15+1))
	p := rolloutPlan{ID: rolloutID(seed, n), Index: n}
	switch x := rng.Float64(); {
	case x < 0.6:
		p.API = 0
	case x < 0.85:
		p.API = 1
	default:
		p.API = 2
	}
	nturns := 1 + rng.IntN(4)
	for t := 0; t < nturns; t++ {
		tp := turnPlan{Input: 150 + rng.IntN(200), Output: 20 + rng.IntN(180)}
		if rng.Float64() < 0.12 {
			tp.Model503 = 1 + rng.IntN(maxAttempts-1)
		}
		// The last turn is the final answer; earlier turns call tools.
		if t < nturns-1 {
			ntools := 1 + rng.IntN(2)
			for i := 0; i < ntools; i++ {
				tool := toolPlan{Name: tools[rng.IntN(len(tools))]}
				if rng.Float64() < 0.08 {
					tool.Fail503 = 1
				}
				tp.Tools = append(tp.Tools, tool)
			}
		}
		p.Turns = append(p.Turns, tp)
	}
	if rng.Float64() < 0.25 {
		// Cut the plan at one run_code call, which raises.
		var at [][2]int
		for t, tp := range p.Turns {
			for i, tool := range tp.Tools {
				if tool.Name == "run_code" {
					at = append(at, [2]int{t, i})
				}
			}
		}
		if len(at) > 0 {
			c := at[rng.IntN(len(at))]
			p.Turns = p.Turns[:c[0]+1]
			p.Turns[c[0]].Tools = p.Turns[c[0]].Tools[:c[1]+1]
			p.SandboxFail = true
		}
	}
	if !p.SandboxFail && rng.Float64() < 0.1 {
		p.VerifyFail = true
	}
	if rng.Float64() < 0.5 {
		p.Reward = 1
	}
	p.Work = make([]float64, 16)
	for i := range p.Work {
		p.Work[i] = 0.5 + rng.Float64()
	}
	return p
}

// work returns the latency factor of step i of the rollout.
func (p *rolloutPlan) work(i int) float64 { return p.Work[i%len(p.Work)] }

// Failed reports whether the rollout ends in an error.
func (p *rolloutPlan) Failed() bool { return p.SandboxFail || p.VerifyFail }
