"""SPEC §19, "A crash never leaves a call and its result out of step", with real
processes: a process running 20 conversations with parallel delegations and tools is
SIGKILLed at a random moment, several times over, on one sqlite file or Postgres
database; then a new message goes to every thread it touched. Every stored history
(parent and delegation threads) and every model input of that last round has each tool
call answered exactly once, after the call, and no result without its call.

Before the fix, the repair wrote its results from the saved checkpoint while it had
read the state with the killed step's finished writes applied, so the supervisor's
calls were lost and their results stored without them (tests/reliability/crash_worker.py)."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

WORKER = Path(__file__).with_name("crash_worker.py")
THREADS = 20
TRIALS = 3


def problems(order: list[list[str]]) -> list[str]:
    """What is out of step in one transcript (calls and results in order)."""
    calls: set[str] = set()
    results: Counter[str] = Counter()
    found = []
    for kind, call_id in order:
        if kind == "call":
            calls.add(call_id)
        else:
            if call_id not in calls:
                found.append(f"result without call {call_id}")
            results[call_id] += 1
    found.extend(f"call {c} answered {results[c]} times" for c in calls if results[c] != 1)
    return found


@pytest.mark.parametrize("driver", ["facade", "graph"])
def test_sigkill_at_random_moments_never_leaves_calls_and_results_out_of_step(shared_storage: str, driver: str) -> None:
    """`facade`: `agent.generate`; `graph`: the compiled graph with `graph.ainvoke`, as
    an embedding app or a server drives it."""
    rng = random.Random()
    for _ in range(TRIALS):
        proc = subprocess.Popen(
            [sys.executable, str(WORKER), shared_storage, "run", str(THREADS), driver],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready", proc.stderr.read() if proc.stderr else ""
        time.sleep(rng.uniform(0.6, 1.6))  # conversations are mid-turn: delegations, tools, model calls
        proc.kill()  # SIGKILL
        proc.wait(10)
    check = subprocess.run(
        [sys.executable, str(WORKER), shared_storage, "check", str(THREADS), driver], capture_output=True, text=True, timeout=240
    )
    assert check.returncode == 0, check.stderr[-3000:]
    report: dict[str, Any] = json.loads(check.stdout.strip().splitlines()[-1])
    parents = [t for t in report["threads"] if "::" not in t]
    assert len(parents) == THREADS  # every conversation was touched
    bad = {thread: found for thread, t in report["threads"].items() if (found := problems(t["order"]))}
    assert not bad, bad
    bad_inputs = [found for i in report["inputs"] if (found := problems(i["order"]))]
    assert not bad_inputs, bad_inputs[:3]
    assert len(report["inputs"]) >= THREADS * 3  # the last round did call the models
