"""What the benchmark measures. Each scenario returns plain data for `bench.report`."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bench.contenders import CONTENDERS, FINAL_ANSWER, Contender, build
from bench.savers import CountingInMemorySaver, CountingSqliteSaver, Counts, Storage, file_size, stored_bytes

__all__ = [
    "BenchError",
    "Config",
    "ContextGrowth",
    "Conversation",
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
    turns: int = 40
    turn_repeats: int = 3  # conversations per contender (fresh database each)
    window: int = 5  # turns compared at the start and at the end
    message_bytes: int = 1024
    conversation_contenders: tuple[str, ...] = CONTENDERS
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
    wall, cpu = time.perf_counter(), time.process_time()
    text = await contender.run(prompt, thread)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    sup1, work1 = contender.call_counts()
    n = contender.n
    if text != FINAL_ANSWER or sup1 - sup0 != n + 1 or work1 - work0 != n:
        raise BenchError(
            f"{contender.name}: expected {n + 1} supervisor calls, {n} worker calls and {FINAL_ANSWER!r}; "
            f"got {sup1 - sup0}, {work1 - work0} and {text!r}"
        )
    return wall, cpu


async def run_checked(contender: Contender, prompt: str, thread: str) -> float:
    """Run once; return the wall time in seconds after checking the model calls it made."""
    return (await run_measured(contender, prompt, thread))[0]


def _rotated(items: list[Contender], i: int) -> list[Contender]:
    k = i % len(items)
    return items[k:] + items[:k]


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
                    for c in _rotated(contenders, i):
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
                    assert isinstance(saver, CountingInMemorySaver | CountingSqliteSaver)
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


# -- a long conversation on sqlite -----------------------------------------------------------


@dataclass
class Conversation:
    name: str
    turn_times: list[list[float]]  # per turn of the long thread: seconds, one sample per repeat
    turn_cpu: list[list[float]]  # the same in process CPU seconds
    fresh_times: list[float]  # first `window` turns of a fresh thread, run alongside the last turns
    fresh_cpu: list[float]
    stored: list[int | None]  # bytes stored for the long thread: 0 before the first turn, then after each
    file_bytes: list[int]  # database file size after the conversation, per repeat
    supervisor_input_last_turn: int  # messages in the supervisor's last input


def user_message(turn: int, size: int) -> str:
    head = f"Turn {turn}: please look into the following notes and delegate. "
    filler = "lorem ipsum dolor sit amet " * (size // 27 + 1)
    return (head + filler)[:size]


async def conversation(cfg: Config) -> list[Conversation]:
    """One thread, `turns` calls with ~1 KB user messages, one delegation per turn.

    The last `window` turns are interleaved with the first `window` turns of a fresh
    thread (in a database of its own), so that "first" and "last" are measured side by
    side and a noisy machine's drift does not pass for growth.
    """
    names = cfg.conversation_contenders
    results = {
        name: Conversation(name, [[] for _ in range(cfg.turns)], [[] for _ in range(cfg.turns)], [], [], [], [], 0)
        for name in names
    }
    window = min(cfg.window, cfg.turns)
    for rep in range(cfg.turn_repeats):
        paths = {name: cfg.workdir / f"conversation-{rep}-{name}.db" for name in names}
        fresh_paths = {name: cfg.workdir / f"conversation-{rep}-{name}-fresh.db" for name in names}
        contenders = await _build_all(1, lambda name, paths=paths: Storage("sqlite", paths[name]), names)
        fresh = {
            c.name: c
            for c in await _build_all(1, lambda name, paths=fresh_paths: Storage("sqlite", paths[name]), names)
        }
        last_rep = rep == cfg.turn_repeats - 1
        thread = f"conversation-{rep}"
        try:
            for c in [*contenders, *fresh.values()]:  # opens connections, warms caches: not part of turn 1
                await run_checked(c, TASK, f"warmup-{rep}")
                c.forget_calls()
            if last_rep:
                for c in contenders:
                    results[c.name].stored.append(0)
            gc.collect()
            for turn in range(cfg.turns):
                message = user_message(turn, cfg.message_bytes)
                k = turn - (cfg.turns - window)  # >= 0: also run turn k of the fresh thread
                for c in _rotated(contenders, turn):
                    res = results[c.name]
                    if k >= 0 and (turn + rep) % 2 == 0:
                        await _fresh_turn(res, fresh[c.name], k, cfg, thread)
                    wall, cpu = await run_measured(c, message, thread)
                    res.turn_times[turn].append(wall)
                    res.turn_cpu[turn].append(cpu)
                    if k >= 0 and (turn + rep) % 2 == 1:
                        await _fresh_turn(res, fresh[c.name], k, cfg, thread)
                    if last_rep:
                        results[c.name].stored.append(await stored_bytes(await c.saver(), thread))
                        if turn == cfg.turns - 1:
                            results[c.name].supervisor_input_last_turn = len(c.supervisor.calls[-1])
                    c.forget_calls()
                if (turn + 1) % 10 == 0 or turn + 1 == cfg.turns:
                    cfg.progress(
                        f"  conversation {rep + 1}/{cfg.turn_repeats} turn {turn + 1}/{cfg.turns}: "
                        + ", ".join(f"{n} {results[n].turn_times[turn][-1] * 1000:.1f} ms" for n in names)
                    )
        finally:
            await _close_all([*contenders, *fresh.values()])
        for name, path in paths.items():
            results[name].file_bytes.append(file_size(path))
    return list(results.values())


async def _fresh_turn(res: Conversation, contender: Contender, k: int, cfg: Config, thread: str) -> None:
    wall, cpu = await run_measured(contender, user_message(k, cfg.message_bytes), thread)
    contender.forget_calls()
    res.fresh_times.append(wall)
    res.fresh_cpu.append(cpu)
