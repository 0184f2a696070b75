"""What compaction does to a long conversation, and what it costs a run that does not need
it (SPEC §25, issue 29).

    python -m bench.compaction [--turns 150] [--runs 150] [--max-tokens 8000]

1. *Long conversation*: ours on sqlite, one thread, `--turns` turns of ~3 KB of text
   (user message, the worker's answer as the delegation's result, the final answer, ~1 KB
   each) and one delegation per turn, with compaction off and on
   (`{"max_tokens": 8000, "keep_last": 6}`, a scripted summariser writing ~1 KB); turns
   alternate between the two threads. Per turn: the supervisor's largest model input
   (tokens at 4 characters a token, the count compaction uses for these models), wall
   and CPU time; then the storage of each thread and each database.
2. *Under the threshold (A/B)*: the same agent without (A) and with (B) compaction whose
   input never reaches `max_tokens`, interleaved A, B, B, A, ...: fresh threads (N=1 and
   5 delegations, workers with a tool, memory and sqlite, facade and compiled graph), and
   turns 11-60 of a conversation. Reported: median process CPU per run, B/A, and the
   model calls each arm made (run_measured checks every run's count; the summariser's
   calls are counted apart: zero).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage

from bench.contenders import Contender, Ours, OursGraph, Script, build, delegation_policy
from bench.savers import Storage, sqlite_footprint, stored_bytes
from bench.scenarios import filler, run_measured, user_message
from supervisor_graph.testing import ScriptedChatModel

__all__ = ["ab", "long_conversation", "main"]

SUMMARY = filler("Summary of the conversation so far", 1024)


def _with_compaction(cls: type[Any], settings: dict[str, Any]) -> type[Any]:
    """`cls` whose supervisor declares `Agent(compaction=settings)` with a counted summariser."""

    class Compacted(cls):  # type: ignore[misc,valid-type]
        name = f"{cls.name}+compaction"

        def declare(self, memory: Any) -> Any:
            self.summaries = 0

            def summarise(messages: list[BaseMessage]) -> str:
                self.summaries += 1
                return SUMMARY

            agent = super().declare(memory)
            agent.compaction = {**settings, "model": ScriptedChatModel(policy=summarise, record_calls=False)}
            return agent

    return Compacted


def _tokens(messages: list[BaseMessage]) -> int:
    return sum(len(str(m.content)) + sum(len(str(c["args"])) for c in getattr(m, "tool_calls", [])) for m in messages) // 4


@dataclass
class Thread:
    name: str
    input_tokens: list[int] = field(default_factory=list)  # the turn's largest supervisor input
    input_messages: list[int] = field(default_factory=list)
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    stored: list[int] = field(default_factory=list)  # bytes of the thread after each turn
    summaries: int = 0
    file_bytes: int = 0  # the database after VACUUM
    table_bytes: int = 0


async def long_conversation(turns: int, max_tokens: int, workdir: Path) -> list[Thread]:
    script = Script(
        worker_answer=filler("Worker findings", 1024), final_answer=filler("Summary for the user", 1024)
    )
    settings = {"max_tokens": max_tokens, "keep_last": 6}
    classes = {"ours": (Ours, delegation_policy), "ours+compaction": (_with_compaction(Ours, settings), delegation_policy)}
    contenders: list[Contender] = []
    threads: list[Thread] = []
    for name in classes:
        path = workdir / f"long-{name}.db"
        contenders.append(await build(name, 1, Storage("sqlite", path), script, classes))
        threads.append(Thread(name))
    try:
        for c in contenders:
            await run_measured(c, "warm up", "warmup")
            await (await c.saver()).adelete_thread("warmup")
            c.forget_calls()
        gc.collect()
        for turn in range(turns):
            message = user_message(turn, 1024)
            for c, t in zip(contenders if turn % 2 == 0 else contenders[::-1], threads if turn % 2 == 0 else threads[::-1], strict=True):
                wall, cpu = await run_measured(c, message, "long")
                t.wall.append(wall)
                t.cpu.append(cpu)
                t.input_tokens.append(max(_tokens(call) for call in c.supervisor.calls))
                t.input_messages.append(max(len(call) for call in c.supervisor.calls))
                t.stored.append(stored_bytes(c.storage, "long") or 0)
                c.forget_calls()
        for c, t in zip(contenders, threads, strict=True):
            t.summaries = getattr(c, "summaries", 0)
    finally:
        for c in contenders:
            await c.aclose()
    for c, t in zip(contenders, threads, strict=True):
        assert c.storage.path is not None
        footprint = sqlite_footprint(c.storage.path)
        t.file_bytes, t.table_bytes = footprint.compact_bytes, footprint.table_bytes
    return threads


async def _ab_cell(arms: dict[str, Contender], runs: int, thread_of: Any) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {"A": [], "B": []}
    for i in range(runs):
        for arm in "AB" if i % 2 == 0 else "BA":
            _, cpu = await run_measured(arms[arm], user_message(i, 1024), thread_of(arm, i))
            arms[arm].forget_calls()
            samples[arm].append(cpu * 1000)
    return samples


async def ab(runs: int, max_tokens: int, workdir: Path) -> list[dict[str, Any]]:
    """Interleaved A/B of runs that never reach the threshold."""
    settings = {"max_tokens": max_tokens, "keep_last": 6}
    out: list[dict[str, Any]] = []
    script = Script(worker_tool=True)
    for kind in ("memory", "sqlite"):
        for n in (1, 5):
            for base in (Ours, OursGraph):
                classes = {"A": (base, delegation_policy), "B": (_with_compaction(base, settings), delegation_policy)}
                arms = {}
                for arm in classes:
                    path = workdir / f"ab-{base.name}-{kind}-{n}-{arm}.db" if kind == "sqlite" else None
                    arms[arm] = await build(arm, n, Storage(kind, path), script, classes)
                try:
                    await _ab_cell(arms, 10, lambda arm, i: f"warm-{arm}-{i}")
                    samples = await _ab_cell(arms, runs, lambda arm, i: f"run-{arm}-{i}")
                    out.append(_row(f"{base.name}, fresh threads", kind, n, samples, arms))
                finally:
                    for c in arms.values():
                        await c.aclose()
    # turns 11-60 of one conversation: counting sees a longer thread, still under the threshold
    long_script = Script(worker_answer=filler("Worker findings", 256), final_answer=filler("Summary for the user", 256))
    classes = {"A": (Ours, delegation_policy), "B": (_with_compaction(Ours, {"max_tokens": 10**9}), delegation_policy)}
    arms = {arm: await build(arm, 1, Storage("sqlite", workdir / f"ab-long-{arm}.db"), long_script, classes) for arm in classes}
    try:
        await _ab_cell(arms, 10, lambda arm, i: f"long-{arm}")
        samples = await _ab_cell(arms, min(runs, 50), lambda arm, i: f"long-{arm}")
        out.append(_row("ours, turns 11-60 of a thread", "sqlite", 1, samples, arms))
    finally:
        for c in arms.values():
            await c.aclose()
    return out


def _row(label: str, kind: str, n: int, samples: dict[str, list[float]], arms: dict[str, Contender]) -> dict[str, Any]:
    a, b = statistics.median(samples["A"]), statistics.median(samples["B"])
    calls = {arm: sum(c.call_counts()) for arm, c in arms.items()}
    return {"label": label, "kind": kind, "n": n, "A": a, "B": b, "calls": calls, "summaries": getattr(arms["B"], "summaries", 0)}


def report_long(threads: list[Thread], turns: int, max_tokens: int) -> str:
    off, on = threads
    marks = sorted({t for t in (1, 10, 25, 50, 100, 150, turns) if t <= turns})
    window = min(10, max(1, turns // 2))
    lines = [
        f"### {turns}-turn conversation with compaction (sqlite, ~3 KB of text per turn, max_tokens {max_tokens}, keep_last 6)",
        "",
        "Supervisor's largest model input of the turn, in tokens (4 characters a token):",
        "",
        "| turn | " + " | ".join(str(t) for t in marks) + " |",
        "|---|" + "---:|" * len(marks),
    ]
    for t in threads:
        lines.append(f"| {t.name} | " + " | ".join(f"{t.input_tokens[m - 1]:,}" for m in marks) + " |")
    after = [i for i, v in enumerate(on.input_tokens) if on.input_tokens[: i + 1] and max(on.input_tokens[: i + 1]) >= max_tokens * 0.8]
    start = after[0] if after else turns
    flat = on.input_tokens[start:]
    lines += [
        "",
        f"With compaction, from turn {start + 1} on (the threshold reached): input min {min(flat or [0]):,}, median "
        f"{int(statistics.median(flat or [0])):,}, max {max(flat or [0]):,} tokens, messages max {max(on.input_messages)}; "
        f"{on.summaries} summaries written ({turns / max(on.summaries, 1):.1f} turns apart). Without: the input grows "
        f"to {off.input_tokens[-1]:,} tokens ({off.input_messages[-1]} messages).",
        "",
        "| contender | first 10 turns (ms/turn) | last 10 (ms/turn) | last/first | CPU last/first | thread stored | growth/turn, last 10 | tables | file after VACUUM |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for t in threads:
        first, last = statistics.median(t.wall[:window]), statistics.median(t.wall[-window:])
        cpu_first, cpu_last = statistics.median(t.cpu[:window]), statistics.median(t.cpu[-window:])
        growth = (t.stored[-1] - t.stored[-window - 1]) / window if len(t.stored) > window else 0
        lines.append(
            f"| {t.name} | {first * 1000:.2f} | {last * 1000:.2f} | {last / first:.2f}x | {cpu_last / cpu_first:.2f}x | "
            f"{_size(t.stored[-1])} | {_size(growth)} | {_size(t.table_bytes)} | {_size(t.file_bytes)} |"
        )
    return "\n".join(lines)


def report_ab(rows: list[dict[str, Any]], max_tokens: int) -> str:
    lines = [
        f"### Under the threshold: compaction off (A) and on (B, max_tokens {max_tokens}), interleaved",
        "",
        "| runs | storage | N | A (ms CPU) | B (ms CPU) | B/A | model calls A / B | summaries |",
        "|---|---|---|---:|---:|---:|---|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['label']} | {r['kind']} | {r['n']} | {r['A']:.2f} | {r['B']:.2f} | {r['B'] / r['A']:.3f} | "
            f"{r['calls']['A']} / {r['calls']['B']} | {r['summaries']} |"
        )
    return "\n".join(lines)


def _size(n: float) -> str:
    return f"{n / 1024 / 1024:.2f} MB" if n >= 1024 * 1024 else f"{n / 1024:.1f} KB"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.compaction")
    parser.add_argument("--turns", type=int, default=150)
    parser.add_argument("--runs", type=int, default=150)
    parser.add_argument("--max-tokens", type=int, default=8000)
    parser.add_argument("--skip-ab", action="store_true")
    args = parser.parse_args(argv)
    started = time.perf_counter()

    async def both(workdir: Path) -> tuple[list[Thread], list[dict[str, Any]]]:
        threads = await long_conversation(args.turns, args.max_tokens, workdir)
        return threads, [] if args.skip_ab else await ab(args.runs, args.max_tokens, workdir)

    with tempfile.TemporaryDirectory() as tmp:
        threads, rows = asyncio.run(both(Path(tmp)))
    print(report_long(threads, args.turns, args.max_tokens))
    if rows:
        print()
        print(report_ab(rows, args.max_tokens))
    print(f"\n(bench time {time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
