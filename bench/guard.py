"""The regression guard (issues 17, 23, 41): a short interleaved timing of ours through the
facade and through the compiled graph, the floor and LangChain's `create_agent` (in
memory, 1 and 5 delegations, workers without and with a tool), the facade against the
compiled graph it drives, and a 150-turn conversation on sqlite (its last 10 turns
against the first 10 of a fresh thread, run alongside). Each ratio must not be more
than 25% worse than the figure committed in `bench/guard.json`.

Every ratio is a ratio of medians of process CPU time per run, from runs interleaved
round-robin in one process (a shared machine's drift and other processes' bursts fall
on both sides alike; CPU time leaves out the time other processes hold the core). A
ratio that trips is not yet a regression: it is measured again, with fresh contenders
and fresh samples, its two contenders alternating (A B B A ...), twice as many runs;
only one that trips again fails the build, and the report shows both measurements.

Each ratio also shows the target issue 41 sets for it (SPEC §18); the guard reports
whether the quick measurement meets it but fails only on a regression: a quick run on
a shared machine is no verdict on a bound a few percent away (`python -m bench`, the
full run, judges the targets).

`python -m bench --quick` runs it (CI runs that) and exits 1 on a regression;
`python -m bench --write-guard` measures with more runs and rewrites the file.
"""

from __future__ import annotations

import json
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.contenders import Script
from bench.peers import peer_timing
from bench.stats import median

__all__ = ["GUARD_FILE", "TOLERANCE", "Cell", "GuardCheck", "cells", "confirm", "measure", "render", "write"]

GUARD_FILE = Path(__file__).with_name("guard.json")
TOLERANCE = 1.25
NAMES = ("ours", "ours_graph", "floor", "create_agent")
PAIRS = (
    ("ours", "floor"), ("ours", "create_agent"), ("ours_graph", "floor"), ("ours_graph", "create_agent"), ("ours", "ours_graph"),
)  # fmt: skip
CONVERSATION_TURNS = 150
CONVERSATION_WINDOW = 10
TEXT = 1024  # bytes of the user message, the worker's answer and the final answer per turn (~3 KB a turn)


@dataclass(frozen=True)
class Cell:
    """One ratio: `a`'s median over `b`'s, or (`turns` > 0) a conversation's last turns over its first."""

    a: str
    b: str = ""
    kind: str = "memory"
    n: int = 1
    tools: bool = False
    turns: int = 0

    @property
    def name(self) -> str:
        if self.turns:
            return f"{self.a} last/first {self.turns}-turn {self.kind}"
        return f"{self.a}/{self.b}{' tools' if self.tools else ''} {self.kind} N={self.n}"

    @property
    def target(self) -> float | None:
        """Issue 41's bound for this ratio (SPEC §18)."""
        if self.turns:
            return 1.2
        if self.b == "create_agent":
            return 0.8
        if self.b == "ours_graph":
            return 1.05  # the facade no slower than the graph it drives
        if self.b == "floor":
            return 1.2 if self.a == "ours_graph" and self.tools else 1.15
        return None


def cells() -> list[Cell]:
    out = [
        Cell(a, b, "memory", n, tools) for tools in (False, True) for n in (1, 5) for a, b in PAIRS
    ]
    return [*out, Cell("ours", kind="sqlite", turns=CONVERSATION_TURNS)]


@dataclass
class GuardCheck:
    name: str  # "ours/floor memory N=1"
    committed: float
    now: float  # the first measurement
    again: float | None = None  # measured again (interleaved, fresh samples) because `now` tripped
    target: float | None = None

    @property
    def limit(self) -> float:
        return self.committed * TOLERANCE

    @property
    def tripped(self) -> bool:
        """The first measurement is more than TOLERANCE above the committed figure."""
        return not self.now <= self.limit  # NaN trips

    @property
    def ok(self) -> bool:
        """Not a regression: within bounds at once, or within bounds when measured again."""
        return not self.tripped or (self.again is not None and self.again <= self.limit)

    @property
    def verdict(self) -> str:
        if not self.tripped:
            return "ok"
        return "ok on re-measure (noise)" if self.ok else "REGRESSION"

    @property
    def meets_target(self) -> bool | None:
        if self.target is None:
            return None
        return (self.again if self.again is not None else self.now) <= self.target

    def describe(self) -> str:
        again = "" if self.again is None else f", {self.again:.2f} when measured again"
        return f"{self.name} is {self.now:.2f}{again}; committed {self.committed:.2f}, limit {self.limit:.2f}"


Remeasure = Callable[[str], Awaitable[float]]


async def confirm(checks: list[GuardCheck], remeasure: Remeasure) -> list[GuardCheck]:
    """Measure every tripped check again (`remeasure(name)`: a fresh interleaved ratio);
    only a check that trips twice stays a regression."""
    for check in checks:
        if check.tripped:
            check.again = await remeasure(check.name)
    return checks


# -- measuring ------------------------------------------------------------------------------


def _ratio(samples: dict[str, list[float]], a: str, b: str) -> float:
    num, den = median(samples[a]), median(samples[b])
    return num / den if den and not math.isnan(num) else math.nan


async def _pairs(group: list[Cell], names: tuple[str, ...], runs: int, warmup: int, workdir: Path) -> dict[str, float]:
    """The ratios of `group` (one storage kind, n and script) from one interleaved run of `names`."""
    first = group[0]
    script = Script(worker_tool=True) if first.tools else None
    measured = await peer_timing((first.kind,), (first.n,), runs, warmup, workdir, names=names, script=script, cpu=True)
    samples = measured["cells"][(first.kind, first.n)]
    return {cell.name: _ratio(samples, cell.a, cell.b) for cell in group}


async def conversation_ratio(cell: Cell, repeats: int, workdir: Path) -> float:
    """Median CPU time of the last 10 turns of a `cell.turns`-turn conversation on sqlite
    over the first 10 turns of a fresh thread, each run beside one of those last turns."""
    from bench.scenarios import Config, ConversationSpec, conversation

    spec = ConversationSpec(
        title="", label=f"guard-{cell.turns}", turns=cell.turns, repeats=repeats, window=CONVERSATION_WINDOW,
        contenders=(cell.a,), user_bytes=TEXT, worker_bytes=TEXT, final_bytes=TEXT,
    )
    cfg = Config(quick=True, iterations=0, warmup=0, workdir=workdir, progress=lambda _: None)
    (result,) = (await conversation(cfg, spec)).contenders
    last = [t for turn in result.turn_cpu[-spec.window :] for t in turn]
    return median(last) / median(result.fresh_cpu)


async def ratios(
    runs: int, warmup: int, workdir: Path, repeats: int = 2, progress: Callable[[str], None] | None = None
) -> dict[str, float]:
    """Every cell's ratio, first measurement: the contenders of one kind, n and script interleaved together."""
    out: dict[str, float] = {}
    groups: dict[tuple[str, int, bool], list[Cell]] = {}
    for cell in cells():
        if cell.turns:
            out[cell.name] = await conversation_ratio(cell, repeats, workdir)
        else:
            groups.setdefault((cell.kind, cell.n, cell.tools), []).append(cell)
        if progress and cell.turns:
            progress(f"  guard {cell.name}: {out[cell.name]:.2f}")
    for group in groups.values():
        out.update(await _pairs(group, NAMES, runs, warmup, workdir))
        if progress:
            progress("  guard " + ", ".join(f"{c.name} {out[c.name]:.2f}" for c in group))
    return out


def remeasurer(runs: int, warmup: int, workdir: Path, repeats: int = 2) -> Remeasure:
    """Measures one cell again: its two contenders alone, alternating, twice the runs (the
    conversation: run again from its first turn)."""
    by_name = {cell.name: cell for cell in cells()}

    async def again(name: str) -> float:
        cell = by_name[name]
        if cell.turns:
            return await conversation_ratio(cell, repeats, workdir)
        return (await _pairs([cell], (cell.a, cell.b), 2 * runs, warmup, workdir))[name]

    return again


def committed() -> dict[str, float]:
    data: dict[str, Any] = json.loads(GUARD_FILE.read_text()) if GUARD_FILE.exists() else {}
    return {name: float(value) for name, value in data.get("ratios", {}).items()}


async def measure(
    runs: int, warmup: int, workdir: Path, progress: Callable[[str], None] | None = None
) -> list[GuardCheck]:
    known = committed()
    targets = {cell.name: cell.target for cell in cells()}
    now = await ratios(runs, warmup, workdir, progress=progress)
    checks = [GuardCheck(name, known[name], value, target=targets.get(name)) for name, value in now.items() if name in known]
    again = remeasurer(runs, warmup, workdir)

    async def noisy(name: str) -> float:
        value = await again(name)
        if progress:
            progress(f"  guard {name} tripped at {now[name]:.2f} (limit {known[name] * TOLERANCE:.2f}); measured again: {value:.2f}")
        return value

    return await confirm(checks, noisy)


async def write(runs: int, warmup: int, workdir: Path) -> dict[str, float]:
    now = await ratios(runs, warmup, workdir, repeats=3)
    GUARD_FILE.write_text(json.dumps({"runs": runs, "ratios": {k: round(v, 3) for k, v in now.items()}}, indent=2) + "\n")
    return now


# -- the report -----------------------------------------------------------------------------


def render(checks: list[GuardCheck]) -> list[str]:
    """The guard's section of RESULTS.md: committed, first and re-measured ratio, verdict, target."""
    if not checks:
        return []
    lines = [
        "## Regression guard",
        "",
        "Ratios of medians of process CPU time per run, from interleaved runs in one process, against "
        f"`bench/guard.json`. A ratio more than {TOLERANCE:.2f}x its committed value is measured again (fresh "
        "contenders, its two contenders alternating, twice the runs; the conversation from its first turn); "
        "only one that trips again fails `python -m bench` (CI runs `--quick`). The target column is issue 41's "
        "bound, shown for information: the full run judges it.",
        "",
        "| Ratio | committed | now | measured again | verdict | target |",
        "|---|---|---|---|---|---|",
    ]
    for c in checks:
        target = "-" if c.target is None else f"<= {c.target:.2f} ({'met' if c.meets_target else 'not met'})"
        again = "-" if c.again is None else f"{c.again:.2f}"
        lines.append(f"| {c.name} | {c.committed:.2f} | {c.now:.2f} | {again} | {c.verdict} | {target} |")
    return [*lines, ""]


def summary(checks: list[GuardCheck]) -> list[str]:
    """What `python -m bench` prints at the end: each regression with both measurements, each
    trip that the re-measure cleared, or that all is well."""
    out = [f"REGRESSION: {c.describe()} (more than 25% above the committed figure twice)" for c in checks if not c.ok]
    out += [f"noise, not a regression: {c.describe()}" for c in checks if c.tripped and c.ok]
    if checks and all(c.ok for c in checks):
        out.append(f"regression guard: all {len(checks)} ratios within 25% of bench/guard.json")
    return out
