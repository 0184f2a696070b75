"""`python -m bench tokens`: input tokens per task, every contender through its real OpenAI
client against one recording fake server (issue 51, SPEC §18).

The task (bench/tokens_server.py): a supervisor, a `research` and a `writing` subagent,
the same instructions and the same subagent answers for every contender
(bench/tokens_contenders.py). Each contender holds one 20-turn conversation on one
thread; its first turn is "one task" (a fresh thread), its first five "five turns".
Every request is counted with tiktoken (bench/tokens_count.py): per call, per agent, by
part, and the prefix it shares with the same agent's previous request.

- `python -m bench tokens` runs every installed contender, prints the tables and writes
  the "Tokens per task" section of bench/RESULTS.md (`--out` another file, `--no-write`
  none);
- `python -m bench tokens --check` is the CI guard: supervisor-graph's two contenders
  (defaults, `inherit_context=False`) on one task and five turns against the committed
  counts in bench/tokens.json; it exits 1 when any count went up (counts are exact: no
  tolerance) and says how to update; lower counts pass and say so;
- `python -m bench tokens --update` measures the same and rewrites bench/tokens.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.tokens_contenders import CONTENDERS, OURS, available, build
from bench.tokens_count import AGENT_NAMES, SCENARIOS, Encoding, Run, count, encoding, summary
from bench.tokens_report import render, write_section
from bench.tokens_server import TOPICS, RecordingServer, agent_of, user_message, writing_answer

__all__ = ["BASELINE", "GUARDED", "GuardReport", "check", "compare", "main", "measure", "update"]

BASELINE = Path(__file__).with_name("tokens.json")
RESULTS = Path(__file__).with_name("RESULTS.md")
GUARD_SCENARIOS = ("one task", "five turns")
GUARDED = ("total", *AGENT_NAMES)  # the counts the guard fails on; the parts are shown, not judged
UPDATE_HINT = "if the change is meant, rewrite the baseline: `python -m bench tokens --update` and commit bench/tokens.json"


async def run_contender(server: RecordingServer, name: str, turns: int, enc: Encoding) -> Run:
    """`turns` user turns of contender `name` on one thread; checks each turn's answer."""
    server.reset()
    start = time.perf_counter()
    contender = build(name, server.url)
    ends = []
    try:
        for turn in range(turns):
            answer = await contender.run(user_message(turn), thread=f"{name}-conversation")
            expected = writing_answer(TOPICS[turn % len(TOPICS)])
            if answer.strip() != expected:
                raise RuntimeError(f"{name}, turn {turn + 1}: answered {answer[:80]!r}, not the scripted brief")
            ends.append(len(server.requests))
    finally:
        await contender.aclose()
    bodies = list(server.requests)
    turn_of = [next(t for t, end in enumerate(ends) if i < end) for i in range(len(bodies))]
    calls = count([(turn_of[i], agent_of(body), body) for i, body in enumerate(bodies)], enc)
    return Run(name, calls, time.perf_counter() - start)


async def measure(names: tuple[str, ...], turns: int, progress: Any = None) -> tuple[Encoding, dict[str, Run]]:
    """Each contender of `names` in turn, on one server."""
    enc = encoding()
    server = RecordingServer().start()
    runs = {}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # peers' deprecation and schema warnings, one per build
            for name in names:
                runs[name] = await run_contender(server, name, turns, enc)
                if progress:
                    progress(f"{name}: {turns} turns, {len(runs[name].calls)} calls, {runs[name].seconds:.1f} s")
    finally:
        server.stop()
    return enc, runs


def baseline_counts(runs: dict[str, Run]) -> dict[str, dict[str, dict[str, int]]]:
    return {
        name: {scenario: summary(run.within(SCENARIOS[scenario])) for scenario in GUARD_SCENARIOS}
        for name, run in runs.items()
        if name in OURS
    }


@dataclass(frozen=True)
class GuardReport:
    """What the guard found: `increases` fail it, `decreases` are news."""

    increases: list[str]
    decreases: list[str]
    problem: str = ""
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.increases and not self.problem

    def message(self) -> str:
        lines = [self.problem] if self.problem else []
        if self.increases:
            lines += ["token counts went UP against bench/tokens.json:", *self.increases]
        if self.decreases:
            lines += ["token counts went down (update the baseline to lock the gain in):", *self.decreases]
        if self.notes and (self.increases or self.decreases):
            lines += ["where it moved (not judged):", *self.notes]
        if self.increases or self.problem:
            lines.append(UPDATE_HINT)
        elif not self.decreases:
            lines.append("token counts are the baseline's")
        return "\n".join(lines)


def compare(enc: Encoding, runs: dict[str, Run], baseline: dict[str, Any]) -> GuardReport:
    """The current counts against the committed ones, exact."""
    if baseline.get("encoding") != enc.name:
        return GuardReport([], [], f"the baseline counts {baseline.get('encoding')}, this run {enc.name} ({enc.source})")
    increases: list[str] = []
    decreases: list[str] = []
    notes: list[str] = []  # parts, shared prefix, calls: shown, not judged
    now = baseline_counts(runs)
    for name, scenarios in baseline["counts"].items():
        for scenario, counts in scenarios.items():
            for key, before in counts.items():
                after = now[name][scenario][key]
                line = f"  {name}, {scenario}, {key}: {before} -> {after} ({after - before:+d})"
                if key not in GUARDED:
                    if after != before:
                        notes.append(line)
                elif after > before:
                    increases.append(line)
                elif after < before:
                    decreases.append(line)
    return GuardReport(increases, decreases, notes=notes)


def check(baseline: Path = BASELINE) -> GuardReport:
    """The CI guard: supervisor-graph's contenders, five turns, against the baseline file."""
    enc, runs = asyncio.run(measure(OURS, SCENARIOS["five turns"]))
    return compare(enc, runs, json.loads(baseline.read_text(encoding="utf-8")))


def update(baseline: Path = BASELINE) -> dict[str, Any]:
    enc, runs = asyncio.run(measure(OURS, SCENARIOS["five turns"]))
    if enc.fallback:
        raise RuntimeError(f"not writing a baseline in {enc.name}: o200k_base could not be loaded")
    data = {
        "encoding": enc.name,
        "how": "python -m bench tokens --update (bench/tokens.py); the guard fails when a total or an agent's count goes up",
        "counts": baseline_counts(runs),
    }
    baseline.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return data


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench tokens", description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="the CI guard: fail when a count went up against bench/tokens.json")
    mode.add_argument("--update", action="store_true", help="rewrite bench/tokens.json from supervisor-graph's counts")
    parser.add_argument("--turns", type=int, default=SCENARIOS["20 turns"], help="turns of the conversation (default 20)")
    parser.add_argument("--contenders", default=",".join(CONTENDERS), help="comma-separated, of: " + ", ".join(CONTENDERS))
    parser.add_argument("--out", type=Path, default=RESULTS, help="markdown file whose token section is (re)written")
    parser.add_argument("--no-write", action="store_true", help="print the tables only")
    parser.add_argument("--json", type=Path, help="also write every call's counts as JSON")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.check:
        report = check()
        print(report.message())
        return 0 if report.ok else 1
    if args.update:
        data = update()
        print(f"wrote {BASELINE}: {json.dumps(data['counts'])}")
        return 0
    wanted = tuple(n.strip() for n in args.contenders.split(",") if n.strip())
    names = available(wanted)
    for missing in sorted(set(wanted) - set(names)):
        print(f"{missing}: its package is not installed, left out")
    enc, runs = asyncio.run(measure(names, args.turns, progress=print))
    text = render(enc, runs, args.turns)
    print(text)
    if args.json:
        calls = {name: [c.__dict__ | {"total": c.total} for c in run.calls] for name, run in runs.items()}
        args.json.write_text(json.dumps({"encoding": enc.name, "calls": calls}, indent=1), encoding="utf-8")
    if not args.no_write:
        write_section(args.out, text)
        print(f"wrote the token section of {args.out}")
    return 0
