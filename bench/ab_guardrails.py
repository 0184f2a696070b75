"""What guardrails (issue 39) cost.

    python -m bench.ab_guardrails [--runs 100] [--part both|none|pii] [--before COMMIT] [--rounds 4]

(a) `none`: a run that declares no guard. The guard wiring touches the graph's nodes in
    many places, so arm A is the code before it: `git archive` of `--before` (by default
    the parent of the commit that added nodes/guard_boundaries.py) in a folder of its own,
    and arm B this checkout; the same scenario (ours through the facade and the compiled
    graph, workers with a tool, N=1 and 5, in memory and on sqlite) runs in one process
    per arm and round, the arms alternating A, B, B, A, ... round by round. Reported: the
    median over rounds of each round's median CPU ms per run.
(b) `pii`: the `pii` guard declared on the supervisor (its workers inherit it) at all six
    boundaries of a 5-delegation run, against the same run without it: an interleaved A/B
    in one process, short messages and ~2 KB ones (no personal data in them, so the guard
    checks every text and changes none: what it costs to look). Target: B/A <= 1.1.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from bench import ab_commits
from bench.contenders import Contender, Ours, OursGraph, Script, build, delegation_policy
from bench.savers import Storage
from bench.scenarios import run_measured

__all__ = ["main", "measure_pii"]

REPO = Path(__file__).resolve().parents[1]
# ~2 KB of plain prose: what a worker's answer or a tool's page might hold, without PII
_PROSE = (
    "The committee reviewed the quarterly figures and agreed that the new process shortened "
    "the average review from nine days to six, mostly because drafts now reach the second "
    "reader earlier. Two teams asked for more time to adopt it; the others reported no trouble. "
)
LONG = Script(worker_tool=True, record_calls=False, worker_answer=_PROSE * 7, final_answer=_PROSE * 4)
SHORT = ab_commits.SHORT


class _Counting:
    """The `pii` guard's check, counted: proof that the guards ran, and how often per run."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls = 0

    def check(self, ctx: Any) -> Any:
        self.calls += 1
        return self.inner.check(ctx)


def _guarded(base: type[Ours]) -> type[Ours]:
    from supervisor_graph.guardrails import BOUNDARIES, Guardrail, pii

    class Guarded(base):  # type: ignore[valid-type,misc]
        name = f"{base.name}+pii"

        def declare(self, memory: Any) -> Any:
            self.counter = _Counting(pii(at=BOUNDARIES).check)
            agent = super().declare(memory)
            declared = {field: getattr(agent, field) for field in agent.model_fields_set}
            return type(agent)(**declared, guardrails=[Guardrail(check=self.counter, at=BOUNDARIES, name="pii")])

    return Guarded


async def measure_pii(runs: int, workdir: Path) -> dict[tuple[str, str, str], dict[str, float]]:
    """(contender, storage, messages) -> {"A": ms, "B": ms, "checks": guard checks per run}."""
    out: dict[tuple[str, str, str], dict[str, float]] = {}
    n = 5
    for script_name, script in (("short", SHORT), ("~2 KB", LONG)):
        for kind in ("memory", "sqlite"):
            for name, base in (("ours", Ours), ("ours_graph", OursGraph)):
                arms: dict[str, Contender] = {}
                for arm, cls in (("A", base), ("B", _guarded(base))):
                    path = workdir / f"pii-{name}-{kind}-{script_name[-2:]}-{arm}.db" if kind == "sqlite" else None
                    arms[arm] = await build(name, n, Storage(kind, path), script, classes={name: (cls, delegation_policy)})
                samples: dict[str, list[float]] = {"A": [], "B": []}
                try:
                    for i in range(10):
                        for arm in ("A", "B"):
                            await run_measured(arms[arm], "warm up", f"warm-{arm}-{i}")
                    counter = arms["B"].counter  # type: ignore[attr-defined]
                    before = counter.calls
                    for i in range(runs):
                        for arm in "AB" if i % 2 == 0 else "BA":
                            _, cpu = await run_measured(arms[arm], "measured", f"{arm}-{i}")
                            samples[arm].append(cpu * 1000)
                    checks = (counter.calls - before) / runs
                    if checks < 2 * n:
                        raise RuntimeError(f"{name}: the pii guard ran {checks} times a run; is the guard wiring in?")
                finally:
                    for contender in arms.values():
                        await contender.aclose()
                out[(name, kind, script_name)] = {**{a: statistics.median(v) for a, v in samples.items()}, "checks": checks}
    return out


# -- (a) no guard declared: the code before the wiring against this checkout --------------


def _before_wiring() -> str:
    added = subprocess.run(
        ["git", "log", "--diff-filter=A", "--format=%H", "--", "nodes/guard_boundaries.py"],
        cwd=REPO, capture_output=True, text=True, check=True,
    ).stdout.split()
    if not added:
        raise SystemExit("nodes/guard_boundaries.py is in no commit yet: give --before COMMIT (the code without the guard wiring)")
    return added[-1] + "^"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ab_guardrails")
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--part", choices=("both", "none", "pii"), default="both")
    parser.add_argument("--before", default=None, help="the code without the guard wiring (default: before nodes/guard_boundaries.py)")
    parser.add_argument("--rounds", type=int, default=4, help="rounds per arm for the no-guard A/B")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        if args.part in ("both", "none"):
            before = args.before or _before_wiring()
            (Path(tmp) / "none").mkdir()
            none = ab_commits.measure(args.runs, args.rounds, before, Path(tmp) / "none")
            print(f"(a) no guard declared: A = {before}, B = this checkout; median of {args.rounds} rounds per arm\n")
            ab_commits.print_table(none, "before the wiring", "as shipped")
            print()
        if args.part in ("both", "pii"):
            (Path(tmp) / "pii").mkdir()
            cost = asyncio.run(measure_pii(args.runs, Path(tmp) / "pii"))
            print("(b) pii at all six boundaries, N=5, workers with a tool: A without it, B with it\n")
            print("| contender | storage | messages | checks per run | A: no guard (ms) | B: pii (ms) | B/A |")
            print("|---|---|---|---|---|---|---|")
            for (name, kind, script), arms in cost.items():
                print(f"| {name} | {kind} | {script} | {arms['checks']:.0f} | {arms['A']:.2f} | {arms['B']:.2f} | {arms['B'] / arms['A']:.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
