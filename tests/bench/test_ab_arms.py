"""The A/B benchmarks' arm A really takes out what it says (bench/ab_decisions.py,
bench/ab_double_texting.py): otherwise their B/A of 1.00 would prove nothing."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest

from bench.contenders import Script, build
from bench.savers import Storage
from bench.scenarios import run_measured


async def test_without_double_texting_runs_hold_a_lease_nobody_can_stop(tmp_path) -> None:
    from bench.ab_double_texting import _without_double_texting
    from supervisor_graph.memory import lease as lease_module

    seen: list[Any] = []
    real = lease_module.ThreadLease._hold

    def spy(self: Any, *args: Any) -> None:
        seen.append(self.stopped)
        real(self, *args)

    for kind in ("memory", "sqlite"):
        contender = await build("ours", 1, Storage(kind, tmp_path / "a.db" if kind == "sqlite" else None), Script(worker_tool=True))
        try:
            with pytest.MonkeyPatch.context() as mp:
                mp.setattr(lease_module.ThreadLease, "_hold", spy)
                with _without_double_texting():
                    await run_measured(contender, "a", f"a-{kind}")
                await run_measured(contender, "b", f"b-{kind}")
        finally:
            await contender.aclose()
    # arm A: no stop event; as shipped: one
    assert [s is None for s in seen] == [True, False, True, False]


def test_decisions_arm_a_is_run_tool_call_from_before_decisions() -> None:
    from bench import ab_decisions
    from supervisor_graph.nodes.steps.decisions import Approvals

    try:
        commit = ab_decisions._before()
    except (SystemExit, subprocess.CalledProcessError) as exc:
        pytest.skip(f"!!! NOT RUN: this clone has no history of nodes/decisions.py ({exc}) !!!")
    old = ab_decisions._old_run_tool_call(commit)
    assert old.__code__.co_filename == f"{commit}:nodes/tools.py"
    # arm B, the code as it is, makes decisions in the `Approvals` step around the tool call
    assert "edited" not in old.__code__.co_varnames and "Edit" in Approvals.awrap_tool_call.__code__.co_names
