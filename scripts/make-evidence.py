#!/usr/bin/env python3
"""Writes Gym's rollout evidence files for a shipped real-Gym capture, from its truth.

    scripts/make-evidence.py CASE OUT [--perf]

CASE is a case folder of testdata/real-gym (its truth/ and truth/plans.json are read); OUT
gets, in Gym's field names: rollouts.jsonl (successful rollouts, in completion order: the
order their POST /run ended), rollouts_failures.jsonl (verify raised: _ng_failure_class
http_error), rollouts_materialized_inputs.jsonl (every dispatched row) and
rollout_verdicts.jsonl (unhealthy where a tool call answered an error, else healthy). With
--perf, as Gym writes them with observability on: ng_perf (turns and tool calls from the
plan, total_latency_ms the agent's POST /run), ng_model_call_capture (one record per model
request, inside the model server's SERVER span) and model-calls/<id>.capture.jsonl.
The rollout id is Gym's "{task}-{rollout}": task = the truth's rollout index, rollout 0.
"""
import gzip
import json
import os
import sys


def spans(case):
    out = []
    for name in os.listdir(os.path.join(case, "truth")):
        if name.endswith(".jsonl.gz"):
            with gzip.open(os.path.join(case, "truth", name), "rt") as f:
                out += [json.loads(l) for l in f if l.strip()]
    return out


def main():
    case, out = sys.argv[1], sys.argv[2]
    perf = "--perf" in sys.argv[3:]
    plans = json.load(open(os.path.join(case, "truth", "plans.json")))
    all_spans = spans(case)
    runs, calls, tool_err = {}, {}, {}
    for s in all_spans:
        r = s.get("rollout")
        if r is None or not s.get("is_rollout_traffic"):
            continue
        if s["role"] == "agent" and s["kind"] == "SERVER" and s["name"] == "POST /run":
            runs[r] = s
        if s["role"] == "model" and s["kind"] == "SERVER":
            calls.setdefault(r, []).append(s)
        if s["role"] == "resources" and s["kind"] == "SERVER" and s["status"] == "ERROR" and "verify" not in s["name"]:
            tool_err[r] = True
    agent = {"type": "responses_api_agents", "name": "simple_agent"}
    os.makedirs(out, exist_ok=True)
    results, failures, inputs, verdicts = [], [], [], []
    for r, plan in enumerate(plans["plans"]):
        rid = f"{r}-0"
        row = {"_ng_task_index": r, "_ng_rollout_index": 0, "agent_ref": agent}
        inputs.append(dict(row, responses_create_params={"input": [{"role": "user", "content": f"task {r}"}]}))
        findings = []
        if tool_err.get(r) or plan.get("tool_errors"):
            findings.append({"check": "tool_call_failed", "locator": "tool_calls", "detail": "a tool call answered an error"})
        verdicts.append(dict(row, rollout_id=rid, verdict="unhealthy" if findings else "healthy", findings=findings, unobserved=[]))
        records = []
        if perf:
            cs = sorted(calls.get(r, []), key=lambda s: s["start_ns"])
            records = [{"model_call_id": f"{rid}-m{i}", "started_at": (s["start_ns"] + 100_000) / 1e9,
                        "completed_at": (s["end_ns"] - 100_000) / 1e9, "status_code": 500 if s["status"] == "ERROR" else 200,
                        "finish_reason": "stop", "prompt_tokens": 50 + i, "completion_tokens": 10,
                        "latency_total_ms": (s["end_ns"] - s["start_ns"] - 200_000) / 1e6} for i, s in enumerate(cs)]
            os.makedirs(os.path.join(out, "model-calls"), exist_ok=True)
            with open(os.path.join(out, "model-calls", f"{rid}.capture.jsonl"), "w") as f:
                for rec in records:
                    f.write(json.dumps(rec) + "\n")
        if plan["verify"] == "raise":
            failures.append(dict(row, _ng_failure_class="http_error", error="POST /verify answered 500"))
            continue
        res = {"responses_create_params": {"input": [{"role": "user", "content": f"task {r}"}]},
               "response": {"id": f"resp_{r}", "object": "response", "output": [],
                            "usage": {"input_tokens": 100 + r, "output_tokens": 21 + r % 3, "total_tokens": 121 + r + r % 3}},
               "reward": 0.0 if plan["verify"] == "zero" else 1.0}
        res.update(row)
        if perf:
            run = runs[r]
            res["ng_perf"] = {"num_turns": plan["turns"], "num_tool_calls": plan["tool_calls"],
                              "prompt_tokens": 100 + r, "completion_tokens": 21 + r % 3,
                              "total_latency_ms": round((run["end_ns"] - run["start_ns"]) / 1e6, 3),
                              "token_observability_coverage": 1.0}
            res["ng_model_call_capture"] = records
        results.append((runs[r]["end_ns"] if r in runs else 0, res))
    results.sort(key=lambda t: t[0])  # completion order
    for name, rows in [("rollouts.jsonl", [x for _, x in results]), ("rollouts_failures.jsonl", failures),
                       ("rollouts_materialized_inputs.jsonl", inputs), ("rollout_verdicts.jsonl", verdicts)]:
        with open(os.path.join(out, name), "w") as f:
            for x in rows:
                f.write(json.dumps(x) + "\n")


if __name__ == "__main__":
    main()
