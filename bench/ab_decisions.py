"""What decisions on approvals (issue 38, SPEC §29) cost a run with no approval.

    python -m bench.ab_decisions [--runs 100] [--before COMMIT]

Decisions changed one function on a run's path: `run_tool_call`, which runs every tool
call of the supervisor's tools node and of a subagent's direct loop. Interleaved A/B in
one process (bench/ab_parity.py's `measure_built_arms`): ours through the facade and the
compiled graph, workers with a tool (every run makes N tool calls), N=1 and 5, in memory
and on sqlite. B is the code as it is; A runs `run_tool_call` as it was before decisions
(its source at `--before`, by default the parent of the commit that added
nodes/steps/decisions.py, compiled into the module's namespace: approve / decline only, and
without the guard checks added since, which a run without guards skips). Reported:
median CPU ms per run.
"""

from __future__ import annotations

import subprocess
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Any
from unittest import mock

from bench.ab_parity import ab_cli, measure_built_arms

__all__ = ["main", "measure_with"]

REPO = Path(__file__).resolve().parents[1]


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=True).stdout


def _before() -> str:
    added = _git("log", "--diff-filter=A", "--format=%H", "--", "nodes/decisions.py").split()
    if not added:
        raise SystemExit("nodes/decisions.py is in no commit: give --before COMMIT")
    return added[-1] + "^"


def _old_run_tool_call(commit: str) -> Any:
    from supervisor_graph.nodes.turn import tools

    source = _git("show", f"{commit}:nodes/tools.py")
    start = source.index("async def run_tool_call(")
    end = source.index("\ndef ", start)
    namespace = dict(vars(tools))
    exec(compile(source[start:end], f"{commit}:nodes/tools.py", "exec"), namespace)  # noqa: S102 - our own history
    return namespace["run_tool_call"]


def measure_with(commit: str) -> Any:
    old = _old_run_tool_call(commit)

    def without_decisions() -> ExitStack:
        stack = ExitStack()
        stack.enter_context(mock.patch("supervisor_graph.nodes.turn.tools.run_tool_call", old))
        stack.enter_context(mock.patch("supervisor_graph.nodes.turn.leaf.run_tool_call", old))
        return stack

    async def measure(runs: int, workdir: Path) -> dict[tuple[str, str, int], dict[str, Any]]:
        return await measure_built_arms(runs, workdir, without_decisions)

    return measure


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    commit = _before()
    if "--before" in argv:
        at = argv.index("--before")
        commit = argv[at + 1]
        del argv[at : at + 2]
    return ab_cli("python -m bench.ab_decisions", measure_with(commit), f"run_tool_call at {commit}", argv)


if __name__ == "__main__":
    raise SystemExit(main())
