"""Two versions of the code, the same runs: what a change costs a run that does not use it.

    python -m bench.ab_commits A [B] [--runs 100] [--rounds 4] [--scripts short]

A change that touches many nodes (guard wiring, decisions, double texting) cannot be
switched off by a patch, so each arm is a commit: `git archive` of its supervisor_graph,
nodes and checkpointers in a folder of its own (B defaults to this checkout), with this
checkout's bench/ driving both. One scenario, ours through the facade and the compiled
graph, workers with a tool, N=1 and 5, in memory and on sqlite, runs in one process per
arm and round, the arms alternating A, B, B, A, ... round by round so a machine that
slows down during the run falls on both. Reported: the median over rounds of each
round's median CPU ms per run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.contenders import FINAL_ANSWER, WORKER_ANSWER, Script, build
from bench.savers import Storage
from bench.scenarios import run_measured

__all__ = ["SHORT", "main", "measure", "print_table", "tree"]

REPO = Path(__file__).resolve().parents[1]
SHORT = Script(worker_tool=True, record_calls=False, worker_answer=WORKER_ANSWER, final_answer=FINAL_ANSWER)
Cells = dict[tuple[str, str, int], dict[str, Any]]


def tree(commit: str, into: Path) -> Path:
    """`commit`'s supervisor_graph (nodes/ and checkpointers/ with it) in `into`, beside this checkout's bench/."""
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", commit, "supervisor_graph", "nodes", "checkpointers"], cwd=REPO, capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


async def one_round(runs: int, workdir: Path) -> dict[str, float]:
    """One arm's round (in its own process): median CPU ms per run of each cell."""
    out: dict[str, float] = {}
    for kind in ("memory", "sqlite"):
        for n in (1, 5):
            for name in ("ours", "ours_graph"):
                path = workdir / f"{name}-{kind}-{n}.db" if kind == "sqlite" else None
                contender = await build(name, n, Storage(kind, path), SHORT)
                try:
                    for i in range(10):
                        await run_measured(contender, "warm up", f"warm-{i}")
                    cpu = [(await run_measured(contender, "measured", f"m-{i}"))[1] * 1000 for i in range(runs)]
                finally:
                    await contender.aclose()
                out[f"{name}|{kind}|{n}"] = statistics.median(cpu)
    return out


def measure(runs: int, rounds: int, before: str, workdir: Path, after: str | None = None) -> Cells:
    """`rounds` rounds per arm, A (`before`) and B (`after`, or this checkout) alternating."""
    bench_only = workdir / "bench-code"
    shutil.copytree(REPO / "bench", bench_only / "bench", ignore=shutil.ignore_patterns("__pycache__", "mastra"))
    roots = {"A": tree(before, workdir / "a"), "B": tree(after, workdir / "b") if after else REPO}
    results: dict[str, list[dict[str, float]]] = {"A": [], "B": []}
    for r in range(rounds):
        for arm in "AB" if r % 2 == 0 else "BA":
            scratch = workdir / f"round-{r}-{arm}"
            scratch.mkdir()
            env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(bench_only), str(roots[arm])])}
            code = (
                "import asyncio, json, pathlib; from bench.ab_commits import one_round; "
                f"print(json.dumps(asyncio.run(one_round({runs}, pathlib.Path({str(scratch)!r})))))"
            )
            proc = subprocess.run([sys.executable, "-c", code], cwd=scratch, env=env, capture_output=True, text=True, check=False)
            if proc.returncode:
                raise RuntimeError(f"arm {arm} round {r} failed:\n{proc.stderr[-3000:]}")
            results[arm].append(json.loads(proc.stdout.strip().splitlines()[-1]))
    out: Cells = {}
    for cell in results["A"][0]:
        name, kind, n = cell.split("|")
        out[(name, kind, int(n))] = {
            **{arm: statistics.median(r[cell] for r in results[arm]) for arm in "AB"},
            **{f"{arm} rounds": [r[cell] for r in results[arm]] for arm in "AB"},
        }
    return out


def print_table(cells: Cells, a_label: str, b_label: str) -> None:
    print(f"| contender | storage | N | A: {a_label} (ms) | B: {b_label} (ms) | B/A | rounds' B/A |")
    print("|---|---|---|---|---|---|---|")
    for (name, kind, n), arms in cells.items():
        per_round = sorted(b / a for a, b in zip(arms["A rounds"], arms["B rounds"], strict=True))
        spread = f"{per_round[0]:.2f}-{per_round[-1]:.2f}"
        print(f"| {name} | {kind} | {n} | {arms['A']:.2f} | {arms['B']:.2f} | {arms['B'] / arms['A']:.3f} | {spread} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ab_commits")
    parser.add_argument("before", help="arm A: a commit")
    parser.add_argument("after", nargs="?", default=None, help="arm B: a commit (default: this checkout)")
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        cells = measure(args.runs, args.rounds, args.before, Path(tmp), args.after)
    print(f"A = {args.before}, B = {args.after or 'this checkout'}; median of {args.rounds} rounds per arm\n")
    print_table(cells, args.before, args.after or "this checkout")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
