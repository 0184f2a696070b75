"""Evaluations (SPEC §31): datasets of cases run against an agent, each checked against
its delegation tree, its answer, its cost and its scorers; a report for people and for
CI, and a gate.

    report = supervisor_graph.evals.run_sync(agent, "cases.yaml", repeat=3)
    supervisor_graph.evals.assert_cases(agent, "cases.yaml")   # in a pytest test

Imports `supervisor_graph.agent`, `memory`, `nodes` and `sync_loop` (the layers below
it), pydantic, PyYAML and rich; `supervisor_graph.cli` imports it, nothing else does.
"""

from __future__ import annotations

from typing import Any

from supervisor_graph.evals.cases import Case, Decision, DelegationExpect, Expect, OutputExpect, ScorerSpec, ToolExpect
from supervisor_graph.evals.loading import EvalFileError, load_cases, parse_cases
from supervisor_graph.evals.matching import Difference
from supervisor_graph.evals.report import CaseReport, EvalReport, RunOutcome
from supervisor_graph.evals.runner import run
from supervisor_graph.evals.targets import HarnessError
from supervisor_graph.sync_loop import run_sync as _run_sync

__all__ = [
    "Case",
    "CaseReport",
    "Decision",
    "DelegationExpect",
    "Difference",
    "EvalFileError",
    "EvalReport",
    "Expect",
    "HarnessError",
    "OutputExpect",
    "RunOutcome",
    "ScorerSpec",
    "ToolExpect",
    "assert_cases",
    "load_cases",
    "parse_cases",
    "run",
    "run_sync",
]


def run_sync(agent: Any, cases: Any, **options: Any) -> EvalReport:
    """`run` for synchronous code (scripts, notebooks, pytest tests)."""
    return _run_sync(run(agent, cases, **options))


def assert_cases(agent: Any, cases: Any, **options: Any) -> EvalReport:
    """Run the cases and raise `AssertionError` with the report as its message unless
    every case passes: the pytest entry point (a regression fails the suite)."""
    report = run_sync(agent, cases, **options)
    if not report.ok:
        raise AssertionError("evaluation failed\n" + report.text())
    return report
