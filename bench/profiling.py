"""cProfile of `ours` on one scenario, summarised by package and by project function.

Also runnable alone: `python -m bench.profiling [--runs 50] [--n 5] [--kind sqlite] [--top 25]`.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import sys
import sysconfig
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.contenders import build
from bench.savers import Storage
from bench.scenarios import TASK, run_checked

__all__ = ["Profile", "ProfileEntry", "format_profile", "profile_from_dict", "profile_ours", "summarize"]

ROOT = Path(__file__).resolve().parents[1]
PROJECT_DIRS = ("nodes", "supervisor_graph", "checkpointers")
_STDLIB = Path(sysconfig.get_paths()["stdlib"]).resolve()


@dataclass
class ProfileEntry:
    where: str  # path:line(function), relative to the repository for project code
    calls: int
    tottime: float  # seconds, summed over the profiled runs
    cumtime: float


@dataclass
class Profile:
    n: int
    kind: str
    runs: int
    wall: float  # seconds for all profiled runs (with profiler overhead)
    total: float  # profiler's total own time
    by_package: dict[str, float] = field(default_factory=dict)  # own time per package
    project_by_tottime: list[ProfileEntry] = field(default_factory=list)
    project_by_cumtime: list[ProfileEntry] = field(default_factory=list)
    overall_by_tottime: list[ProfileEntry] = field(default_factory=list)  # any code, idle wait excluded


def _package(filename: str, func: str) -> str:
    if filename.startswith("~") or filename.startswith("<"):
        if "select.epoll" in func or "select.select" in func or "select.poll" in func or "kqueue" in func:
            return "event loop idle (waiting for I/O, e.g. the sqlite thread)"
        return "builtins (C)"
    path = Path(filename).resolve()
    try:
        rel = path.relative_to(ROOT)
        return f"project: {rel.parts[0]}/" if rel.parts[0] in PROJECT_DIRS else f"repo: {rel.parts[0]}"
    except ValueError:
        pass
    parts = path.parts
    if "site-packages" in parts:
        i = parts.index("site-packages")
        return parts[i + 1].removesuffix(".py") if i + 1 < len(parts) else "site-packages"
    try:
        rel = path.relative_to(_STDLIB)
        return f"stdlib: {rel.parts[0].removesuffix('.py')}"
    except ValueError:
        return "other"


def _where(filename: str, line: int, func: str) -> str:
    if filename.startswith(("~", "<")):
        return func
    path = Path(filename).resolve()
    try:
        filename = str(path.relative_to(ROOT))
    except ValueError:
        parts = path.parts
        if "site-packages" in parts:
            filename = "/".join(parts[parts.index("site-packages") + 1 :])
        else:
            try:
                filename = str(path.relative_to(_STDLIB))
            except ValueError:
                pass
    return f"{filename}:{line}({func})"


def _is_project(filename: str) -> bool:
    try:
        rel = Path(filename).resolve().relative_to(ROOT)
    except ValueError:
        return False
    return rel.parts[0] in PROJECT_DIRS


async def profile_ours(n: int, kind: str, runs: int, workdir: Path, *, warmup: int = 3, top: int = 15) -> Profile:
    contender = await build("ours", n, Storage(kind, workdir / "profile.db" if kind == "sqlite" else None))
    profiler = cProfile.Profile()
    try:
        for i in range(warmup):
            await run_checked(contender, TASK, f"warmup-{i}")
        contender.forget_calls()
        loop = asyncio.get_running_loop()
        start = loop.time()
        profiler.enable()
        for i in range(runs):
            await run_checked(contender, TASK, f"profiled-{i}")
        profiler.disable()
        wall = loop.time() - start
    finally:
        await contender.aclose()
    return summarize(profiler, n=n, kind=kind, runs=runs, wall=wall, top=top)


def summarize(profiler: cProfile.Profile, *, n: int, kind: str, runs: int, wall: float, top: int = 15) -> Profile:
    """A `Profile` from a finished cProfile: own time by package, top project and overall functions."""
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    by_package: dict[str, float] = defaultdict(float)
    project = []
    overall = []
    total = 0.0
    for (filename, line, func), (_cc, nc, tt, ct, _callers) in stats.items():
        total += tt
        package = _package(filename, func)
        by_package[package] += tt
        entry = ProfileEntry(_where(filename, line, func), nc, tt, ct)
        if _is_project(filename):
            project.append(entry)
        if not package.startswith("event loop idle"):
            overall.append(entry)
    return Profile(
        n=n,
        kind=kind,
        runs=runs,
        wall=wall,
        total=total,
        by_package=dict(sorted(by_package.items(), key=lambda kv: -kv[1])),
        project_by_tottime=sorted(project, key=lambda e: -e.tottime)[:top],
        project_by_cumtime=sorted(project, key=lambda e: -e.cumtime)[:top],
        overall_by_tottime=sorted(overall, key=lambda e: -e.tottime)[:top],
    )


def profile_from_dict(data: dict[str, Any]) -> Profile:
    """The inverse of `dataclasses.asdict(profile)` (profiles cross process boundaries as JSON)."""
    entries = ("project_by_tottime", "project_by_cumtime", "overall_by_tottime")
    fields = {k: v for k, v in data.items() if k not in entries}
    return Profile(**fields, **{k: [ProfileEntry(**e) for e in data.get(k, [])] for k in entries})


def format_profile(p: Profile, *, packages: int = 12) -> str:
    per_run = 1000 / p.runs
    lines = [
        f"ours, N={p.n}, {p.kind}: {p.runs} runs, {p.wall * per_run:.1f} ms of wall time per run under the profiler",
        "",
        "own time by package (ms/run, share):",
    ]
    for name, tt in list(p.by_package.items())[:packages]:
        lines.append(f"  {tt * per_run:8.2f}  {tt / p.total:6.1%}  {name}")
    for title, entries in (
        ("project functions by own time", p.project_by_tottime),
        ("project functions by cumulative time", p.project_by_cumtime),
        ("all functions by own time", p.overall_by_tottime),
    ):
        lines += ["", f"{title} (ms/run own, ms/run cumulative, calls/run):"]
        for e in entries:
            lines.append(
                f"  {e.tottime * per_run:7.3f}  {e.cumtime * per_run:8.3f}  {e.calls / p.runs:6.1f}  {e.where}"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.profiling", description=__doc__)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--n", type=int, default=5, help="delegations per run")
    parser.add_argument("--kind", choices=("memory", "sqlite"), default="sqlite")
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-profile-") as tmp:
        result = asyncio.run(profile_ours(args.n, args.kind, args.runs, Path(tmp), top=args.top))
    sys.stdout.write(format_profile(result) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
