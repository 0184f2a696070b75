"""What the benchmark measures. Each scenario returns plain data for `bench.report`."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from bench.contenders import CONTENDERS, FINAL_ANSWER, PROMPT, WORKER_ANSWER, Contender, Script, build
from bench.savers import (
    COUNTING,
    Counts,
    SqliteFootprint,
    Storage,
    remove_sqlite,
    sqlite_footprint,
    stored_bytes,
)
from bench.stats import round_order

if TYPE_CHECKING:
    from bench.agui import AguiSpec
    from bench.concurrency import ConcurrencySpec

__all__ = [
    "BenchError",
    "Config",
    "ContextGrowth",
    "Conversation",
    "ConversationRun",
    "ConversationSpec",
    "TimingCell",
    "WriteCount",
    "checkpoint_writes",
    "context_growth",
    "conversation",
    "run_checked",
    "run_measured",
    "timing",
]

TASK = "Split the task between the workers, then report."


class BenchError(RuntimeError):
    """A contender did not make the expected model calls or gave a wrong answer."""


@dataclass
class Config:
    quick: bool
    iterations: int  # timed runs per contender per (checkpointer, delegations) cell
    warmup: int  # untimed runs per contender before timing
    workdir: Path  # sqlite files go here
    delegations: tuple[int, ...] = (1, 5)
    kinds: tuple[str, ...] = ("memory", "sqlite")
    conversations: tuple[ConversationSpec, ...] = ()
    concurrency: ConcurrencySpec | None = None
    agui: AguiSpec | None = None
    profile_runs: int = 30
    progress: Callable[[str], None] = print


def _storage(cfg: Config, kind: str, label: str, *, counting: bool = False) -> Storage:
    return Storage(kind, cfg.workdir / f"{label}.db" if kind == "sqlite" else None, counting)


async def _build_all(
    n: int, storage_for: Callable[[str], Storage], names: tuple[str, ...] = CONTENDERS
) -> list[Contender]:
    return [await build(name, n, storage_for(name)) for name in names]


async def _close_all(contenders: list[Contender]) -> None:
    for c in contenders:
        await c.aclose()


async def run_measured(contender: Contender, prompt: str, thread: str) -> tuple[float, float]:
    """Run once and check the model calls it made; return (wall, process CPU) seconds.

    CPU time covers every thread of this process (the aiosqlite thread too) and not the
    time other processes hold the CPU, so it is steadier than wall time on a busy machine.
    """
    sup0, work0 = contender.call_counts()
    tools0 = contender.lookup.runs
    wall, cpu = time.perf_counter(), time.process_time()
    text = await contender.run(prompt, thread)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    sup1, work1 = contender.call_counts()
    n = contender.n
    expected = contender.script.final_answer
    worker_calls = n * contender.script.worker_calls
    tool_runs = contender.lookup.runs - tools0
    if text != expected or sup1 - sup0 != n + 1 or work1 - work0 != worker_calls or tool_runs != (n if contender.script.worker_tool else 0):
        raise BenchError(
            f"{contender.name}: expected {n + 1} supervisor calls, {worker_calls} worker calls, "
            f"{n if contender.script.worker_tool else 0} tool runs and {expected[:40]!r}; "
            f"got {sup1 - sup0}, {work1 - work0}, {tool_runs} and {text[:40]!r}"
        )
    return wall, cpu


async def run_checked(contender: Contender, prompt: str, thread: str) -> float:
    """Run once; return the wall time in seconds after checking the model calls it made."""
    return (await run_measured(contender, prompt, thread))[0]


# -- per-run wall time --------------------------------------------------------------


@dataclass
class TimingCell:
    kind: str
    n: int
    samples: dict[str, list[float]] = field(default_factory=dict)  # contender -> seconds per run


async def timing(cfg: Config) -> list[TimingCell]:
    """Wall time per run, each on a fresh thread; contenders interleaved round-robin."""
    cells = []
    for kind in cfg.kinds:
        for n in cfg.delegations:
            contenders = await _build_all(
                n, lambda name, kind=kind, n=n: _storage(cfg, kind, f"time-{kind}-{n}-{name}")
            )
            cell = TimingCell(kind, n, {c.name: [] for c in contenders})
            try:
                for j in range(cfg.warmup):
                    for c in contenders:
                        await run_checked(c, TASK, f"warmup-{j}")
                        c.forget_calls()
                gc.collect()
                for i in range(cfg.iterations):
                    for c in round_order(contenders, i):
                        cell.samples[c.name].append(await run_checked(c, TASK, f"run-{i}"))
                        c.forget_calls()
            finally:
                await _close_all(contenders)
            cells.append(cell)
            summary = ", ".join(f"{name} {sorted(s)[len(s) // 2] * 1000:.1f} ms" for name, s in cell.samples.items())
            cfg.progress(f"  timing {kind:6s} N={n}: {summary}")
    return cells


# -- checkpoint writes -----------------------------------------------------------------


@dataclass
class WriteCount:
    name: str
    kind: str
    n: int
    counts: Counts


async def checkpoint_writes(cfg: Config) -> list[WriteCount]:
    """Checkpoints and pending writes one run stores (after a warm-up run on another thread)."""
    out = []
    for kind in cfg.kinds:
        for n in cfg.delegations:
            for name in CONTENDERS:
                contender = await build(name, n, _storage(cfg, kind, f"writes-{kind}-{n}-{name}", counting=True))
                try:
                    await run_checked(contender, TASK, "warmup")
                    saver = await contender.saver()
                    assert isinstance(saver, COUNTING)
                    saver.counts.reset()
                    await run_checked(contender, TASK, "measured")
                    out.append(WriteCount(name, kind, n, saver.counts.copy()))
                finally:
                    await contender.aclose()
            cfg.progress(
                f"  writes {kind:6s} N={n}: "
                + ", ".join(
                    f"{w.name} {w.counts.checkpoints} ckpt/{w.counts.total_bytes} B" for w in out[-len(CONTENDERS) :]
                )
            )
    return out


# -- supervisor context growth -----------------------------------------------------------


@dataclass
class ContextGrowth:
    name: str
    n: int
    supervisor_inputs: list[int]  # messages the supervisor model received, per call of one run
    worker_inputs: list[int]  # messages each worker model received, in delegation order

    @property
    def added(self) -> list[int]:
        """Messages added to the supervisor's input by each delegation."""
        s = self.supervisor_inputs
        return [b - a for a, b in zip(s, s[1:], strict=False)]


async def context_growth(cfg: Config) -> list[ContextGrowth]:
    n = max(cfg.delegations)
    out = []
    for name in CONTENDERS:
        contender = await build(name, n, Storage("memory"))
        try:
            await run_checked(contender, TASK, "measured")
            out.append(
                ContextGrowth(
                    name,
                    n,
                    [len(m) for m in contender.supervisor.calls],
                    [len(m) for w in contender.workers for m in w.calls],
                )
            )
        finally:
            await contender.aclose()
    cfg.progress("  context growth: " + ", ".join(f"{g.name} +{g.added}" for g in out))
    return out


# -- long conversations on sqlite ---------------------------------------------------------


@dataclass(frozen=True)
class ConversationSpec:
    """One conversation scenario: `turns` calls on one thread, one delegation per turn.

    Message sizes: the user message is `user_bytes`; the worker's answer (the tool result
    the supervisor stores) and the supervisor's final answer are `worker_bytes` and
    `final_bytes` of text, or the short default answers when 0.
    """

    title: str  # heading after "<turns>-turn conversation on sqlite"
    label: str  # prefix of its database files
    turns: int
    repeats: int  # conversations per contender (fresh database each)
    window: int  # turns compared at the start and at the end
    contenders: tuple[str, ...]
    user_bytes: int = 1024
    worker_bytes: int = 0
    final_bytes: int = 0
    storage_target: int | None = None  # bytes the database file of ours may hold after the conversation

    def script(self) -> Script:
        return Script(
            worker_answer=filler("Worker findings", self.worker_bytes) if self.worker_bytes else WORKER_ANSWER,
            final_answer=filler("Summary for the user", self.final_bytes) if self.final_bytes else FINAL_ANSWER,
        )

    @property
    def text_per_turn(self) -> int:
        """Bytes of message text one turn adds to the conversation (user, call, result, answer)."""
        s = self.script()
        return self.user_bytes + len(PROMPT) + len(s.worker_answer) + len(s.final_answer)

    def with_turns(self, turns: int) -> ConversationSpec:
        return replace(self, turns=turns, window=min(self.window, max(1, turns // 2)))


@dataclass
class Conversation:
    name: str
    turn_times: list[list[float]]  # per turn of the long thread: seconds, one sample per repeat
    turn_cpu: list[list[float]]  # the same in process CPU seconds
    fresh_times: list[float]  # first `window` turns of a fresh thread, run alongside the last turns
    fresh_cpu: list[float]
    stored: list[int | None]  # bytes stored for the long thread: 0 before the first turn, then after each
    footprints: list[SqliteFootprint]  # the database after the conversation, per repeat
    supervisor_input_last_turn: int  # messages in the supervisor's last input


@dataclass
class ConversationRun:
    spec: ConversationSpec
    contenders: list[Conversation]


def filler(head: str, size: int) -> str:
    """`size` characters of text starting with `head`."""
    text = head + ": " + "lorem ipsum dolor sit amet " * (size // 27 + 1)
    return text[:size]


def user_message(turn: int, size: int) -> str:
    return filler(f"Turn {turn}: please look into the following notes and delegate", size)


async def conversation(cfg: Config, spec: ConversationSpec) -> ConversationRun:
    """One thread, `turns` calls with ~1 KB user messages, one delegation per turn.

    The last `window` turns are interleaved with the first `window` turns of a fresh
    thread (in a database of its own), so that "first" and "last" are measured side by
    side and a noisy machine's drift does not pass for growth. The warm-up thread is
    deleted before the database is measured, so the file holds the conversation only.
    """
    names = spec.contenders
    script = spec.script()
    results = {
        name: Conversation(name, [[] for _ in range(spec.turns)], [[] for _ in range(spec.turns)], [], [], [], [], 0)
        for name in names
    }
    window = min(spec.window, spec.turns)
    for rep in range(spec.repeats):
        paths = {name: cfg.workdir / f"{spec.label}-{rep}-{name}.db" for name in names}
        fresh_paths = {name: cfg.workdir / f"{spec.label}-{rep}-{name}-fresh.db" for name in names}

        async def build_on(paths: dict[str, Path]) -> list[Contender]:
            return [await build(name, 1, Storage("sqlite", paths[name]), script) for name in names]

        contenders = await build_on(paths)
        fresh = {c.name: c for c in await build_on(fresh_paths)}
        last_rep = rep == spec.repeats - 1
        thread = f"conversation-{rep}"
        try:
            for c in [*contenders, *fresh.values()]:  # opens connections, warms caches: not part of turn 1
                await run_checked(c, TASK, f"warmup-{rep}")
                c.forget_calls()
            for c in contenders:
                await (await c.saver()).adelete_thread(f"warmup-{rep}")
                if last_rep:
                    results[c.name].stored.append(0)
            gc.collect()
            for turn in range(spec.turns):
                message = user_message(turn, spec.user_bytes)
                k = turn - (spec.turns - window)  # >= 0: also run turn k of the fresh thread
                for c in round_order(contenders, turn):
                    res = results[c.name]
                    if k >= 0 and (turn + rep) % 2 == 0:
                        await _fresh_turn(res, fresh[c.name], k, spec, thread)
                    wall, cpu = await run_measured(c, message, thread)
                    res.turn_times[turn].append(wall)
                    res.turn_cpu[turn].append(cpu)
                    if k >= 0 and (turn + rep) % 2 == 1:
                        await _fresh_turn(res, fresh[c.name], k, spec, thread)
                    if last_rep:
                        res.stored.append(stored_bytes(c.storage, thread))
                        if turn == spec.turns - 1 and c.supervisor.calls:
                            res.supervisor_input_last_turn = len(c.supervisor.calls[-1])
                    c.forget_calls()
                if (turn + 1) % 10 == 0 or turn + 1 == spec.turns:
                    cfg.progress(
                        f"  conversation {rep + 1}/{spec.repeats} turn {turn + 1}/{spec.turns}: "
                        + ", ".join(f"{n} {results[n].turn_times[turn][-1] * 1000:.1f} ms" for n in names)
                    )
        finally:
            await _close_all([*contenders, *fresh.values()])
        for name, path in paths.items():
            results[name].footprints.append(sqlite_footprint(path))
        for path in [*paths.values(), *fresh_paths.values()]:
            remove_sqlite(path)  # the floor's file of a long conversation is large
    return ConversationRun(spec, list(results.values()))


async def _fresh_turn(res: Conversation, contender: Contender, k: int, spec: ConversationSpec, thread: str) -> None:
    wall, cpu = await run_measured(contender, user_message(k, spec.user_bytes), thread)
    contender.forget_calls()
    res.fresh_times.append(wall)
    res.fresh_cpu.append(cpu)
