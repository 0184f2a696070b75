"""RESULTS.md (and an optional chart) from the scenarios' data."""

from __future__ import annotations

import datetime as dt
import math
import os
import platform
import subprocess
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from bench.aegra import ScaleoutResult, summary
from bench.agui import AguiResult
from bench.concurrency import ConcurrencyRun
from bench.contenders import CONTENDERS
from bench.guard import GuardCheck
from bench.guard import render as render_guard
from bench.mastra_peer import MastraResult
from bench.one_path import OnePath
from bench.profiling import Profile, format_profile
from bench.savers import Counts
from bench.scenarios import Config, ContextGrowth, Conversation, ConversationRun, TimingCell, WriteCount
from bench.stats import median, p90, quantile, ratio
from bench.working_memory import VARIANTS, WorkingMemoryCell

__all__ = ["HEADINGS", "Results", "Target", "machine_info", "render", "targets", "write_chart"]

ROOT = Path(__file__).resolve().parents[1]
NOTES = Path(__file__).resolve().parent / "what_was_tried.md"  # hand-written, copied into RESULTS.md

H_MACHINE = "## Machine"
H_TARGETS = "## Targets"
H_TIMING = "## Per-run wall time"
H_WRITES = "## Checkpoint writes and bytes per delegation"
H_CONTEXT = "## Supervisor context growth"
H_CONVERSATION = "-turn conversation on sqlite"  # preceded by "## <turns>"
H_PROFILE = "## Profile of ours"
H_CONCURRENCY = "## Concurrency"
H_AGUI = "## AG-UI endpoint"
H_SCALEOUT = "## Scale-out on Aegra"
H_WORKING_MEMORY = "## Working memory"
H_TRIED = "## What was tried"
HEADINGS = (H_MACHINE, H_TARGETS, H_TIMING, H_WRITES, H_CONTEXT, H_CONVERSATION, H_CONCURRENCY, H_AGUI, H_TRIED)
TIMING_FLOOR_TARGET = 1.3
TIMING_INCUMBENT_TARGET = 0.5  # issue 17 (issue 7 asked for 0.6)
PEER_TARGET = 0.8  # ours / every other Python framework (issue 17)
CHECKPOINTS_PER_DELEGATION_TARGET = 3  # issue 17
CONVERSATION_TARGET = 1.2
CONCURRENCY_TARGET = 1.3
RSS_TARGET = 250 * 1024 * 1024  # issue 17 (issue 7 asked for 300 MB)


@dataclass
class Results:
    config: Config
    machine: dict[str, str]
    timing: list[TimingCell] = field(default_factory=list)
    writes: list[WriteCount] = field(default_factory=list)
    context: list[ContextGrowth] = field(default_factory=list)
    conversations: list[ConversationRun] = field(default_factory=list)
    profile: Profile | None = None
    concurrency: ConcurrencyRun | None = None
    agui: AguiResult | None = None
    scaleout: ScaleoutResult | None = None
    working_memory: list[WorkingMemoryCell] = field(default_factory=list)
    peers: dict[str, Any] | None = None
    mastra: MastraResult | None = None
    one_path: OnePath | None = None
    guard: list[GuardCheck] = field(default_factory=list)
    elapsed: float = 0.0


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def _git(*args: str) -> str:
    try:
        out = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=10, check=True)
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout.strip()


def machine_info() -> dict[str, str]:
    commit = _git("rev-parse", "--short", "HEAD") or "unknown"
    if _git("status", "--porcelain", "--untracked-files=no"):
        commit += " (with uncommitted changes)"
    return {
        "Date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "CPU count": str(os.cpu_count()),
        "Platform": platform.platform(),
        "Processor": platform.processor() or platform.machine(),
        "Python": f"{platform.python_implementation()} {platform.python_version()}",
        "langgraph": _version("langgraph"),
        "langgraph-supervisor": _version("langgraph-supervisor"),
        "langgraph-prebuilt": _version("langgraph-prebuilt"),
        "langgraph-checkpoint": _version("langgraph-checkpoint"),
        "langgraph-checkpoint-sqlite": _version("langgraph-checkpoint-sqlite"),
        "langchain-core": _version("langchain-core"),
        "aiosqlite": _version("aiosqlite"),
        "supervisor-graph commit": commit,
    }


# -- formatting -----------------------------------------------------------------------


def _ms(seconds: float) -> str:
    return "n/a" if math.isnan(seconds) else f"{seconds * 1000:.2f}"


def _x(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value:.2f}x"


def _bytes(n: float | None) -> str:
    if n is None or (isinstance(n, float) and math.isnan(n)):
        return "n/a"
    if abs(n) >= 1024 * 1024:
        return f"{n / 1024 / 1024:.2f} MB"
    if abs(n) >= 1024:
        return f"{n / 1024:.1f} KB"
    return f"{n:.0f} B"


def _num(value: float) -> str:
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.1f}"


def _table(header: list[str], rows: list[list[str]], *, numeric: bool = True) -> list[str]:
    return [
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" if i == 0 or not numeric else "---:" for i in range(len(header))) + "|",
        *("| " + " | ".join(row) + " |" for row in rows),
    ]


# -- sections -------------------------------------------------------------------------


def _machine(r: Results) -> list[str]:
    cfg = r.config
    parts = [f"{cfg.iterations} timed runs per contender per cell after {cfg.warmup} warm-up runs"]
    parts += [f"{c.repeats} conversation(s) of {c.turns} turns" for c in cfg.conversations]
    if cfg.concurrency is not None:
        parts.append(f"{cfg.concurrency.rounds} process(es) of {cfg.concurrency.runs} concurrent runs per contender")
    if cfg.agui is not None:
        parts.append(f"{cfg.agui.runs} AG-UI runs from {cfg.agui.clients} clients")
    mode = f"{'quick' if cfg.quick else 'full'}: {'; '.join(parts)}; total bench time {r.elapsed:.0f} s"
    rows = [[k, v] for k, v in r.machine.items()] + [["Mode", mode]]
    return [H_MACHINE, "", *_table(["Item", "Value"], rows, numeric=False)]


def _timing(r: Results) -> list[str]:
    lines = [
        H_TIMING,
        "",
        "Milliseconds per `generate` / `ainvoke`, each run on a fresh thread, contenders interleaved "
        "in rounds, each round in a fresh random order (so every contender follows every other alike), after warm-up. Every run is checked: "
        "N+1 supervisor model calls, N worker model calls, final answer `done`.",
        "",
    ]
    header = ["Checkpointer", "N"]
    for name in CONTENDERS:
        header += [f"{name} median", f"{name} p90"]
    header += ["ours/floor", "ours/incumbent", "ours/floor p90", "ours/incumbent p90"]
    rows = []
    for cell in r.timing:
        s = cell.samples
        row = [cell.kind, str(cell.n)]
        for name in CONTENDERS:
            row += [_ms(median(s[name])), _ms(p90(s[name]))]
        row += [
            _x(ratio(median(s["ours"]), median(s["floor"]))),
            _x(ratio(median(s["ours"]), median(s["incumbent"]))),
            _x(ratio(p90(s["ours"]), p90(s["floor"]))),
            _x(ratio(p90(s["ours"]), p90(s["incumbent"]))),
        ]
        rows.append(row)
    lines += _table(header, rows)

    # Marginal cost of a delegation: the slope between the smallest and largest N.
    ns = sorted({c.n for c in r.timing})
    if len(ns) >= 2:
        lo, hi = ns[0], ns[-1]
        lines += [
            "",
            f"Marginal cost of one delegation, (median at N={hi} - median at N={lo}) / {hi - lo}, and the "
            f"fixed cost per run (median at N={lo} minus {lo} delegation(s)), in ms:",
            "",
        ]
        rows = []
        by = {(c.kind, c.n): c for c in r.timing}
        for kind in dict.fromkeys(c.kind for c in r.timing):
            a, b = by.get((kind, lo)), by.get((kind, hi))
            if a is None or b is None:
                continue
            row = [kind]
            slopes = {}
            for name in CONTENDERS:
                slopes[name] = (median(b.samples[name]) - median(a.samples[name])) / (hi - lo)
                fixed = median(a.samples[name]) - lo * slopes[name]
                row += [_ms(slopes[name]), _ms(fixed)]
            row += [_x(ratio(slopes["ours"], slopes["floor"])), _x(ratio(slopes["ours"], slopes["incumbent"]))]
            rows.append(row)
        header = ["Checkpointer"]
        for name in CONTENDERS:
            header += [f"{name} per delegation", f"{name} fixed"]
        header += ["ours/floor per delegation", "ours/incumbent per delegation"]
        lines += _table(header, rows)
    return lines


def _per(counts: Counts, n: int) -> dict[str, float]:
    return {
        "checkpoints": counts.checkpoints / n,
        "writes": counts.writes / n,
        "bytes": counts.total_bytes / n,
    }


def _writes(r: Results) -> list[str]:
    lines = [
        H_WRITES,
        "",
        "What one run asks the checkpointer to store (a warm-up run on another thread first). "
        "*checkpoints* = `aput` calls (*nested*: in a subgraph namespace), *writes* = (channel, value) "
        "pairs in `aput_writes` calls (*batches*), bytes = `serde.dumps_typed` sizes of the checkpoint "
        "plus its metadata and of each written value (what `AsyncSqliteSaver` stores; `InMemorySaver` "
        "keeps only changed channels, so its real footprint is smaller).",
        "",
    ]
    header = [
        "Contender",
        "Checkpointer",
        "N",
        "checkpoints",
        "nested",
        "write batches",
        "writes",
        "checkpoint bytes",
        "write bytes",
        "total bytes",
        "checkpoints / delegation",
        "bytes / delegation",
    ]
    rows = []
    for w in r.writes:
        c = w.counts
        per = _per(c, w.n)
        rows.append(
            [
                w.name,
                w.kind,
                str(w.n),
                str(c.checkpoints),
                str(c.nested_checkpoints),
                str(c.write_batches),
                str(c.writes),
                _bytes(c.checkpoint_bytes),
                _bytes(c.write_bytes),
                _bytes(c.total_bytes),
                _num(per["checkpoints"]),
                _bytes(per["bytes"]),
            ]
        )
    lines += _table(header, rows)

    ns = sorted({w.n for w in r.writes})
    if len(ns) >= 2:
        lo, hi = ns[0], ns[-1]
        by = {(w.name, w.kind, w.n): w.counts for w in r.writes}
        rows = []
        for kind in dict.fromkeys(w.kind for w in r.writes):
            for name in CONTENDERS:
                a, b = by.get((name, kind, lo)), by.get((name, kind, hi))
                if a is None or b is None:
                    continue
                d = hi - lo
                rows.append(
                    [
                        name,
                        kind,
                        _num((b.checkpoints - a.checkpoints) / d),
                        _num((b.write_batches - a.write_batches) / d),
                        _num((b.writes - a.writes) / d),
                        _bytes((b.total_bytes - a.total_bytes) / d),
                    ]
                )
        lines += [
            "",
            f"Marginal cost of one delegation, (run with N={hi} - run with N={lo}) / {hi - lo}:",
            "",
            *_table(["Contender", "Checkpointer", "checkpoints", "write batches", "writes", "bytes"], rows),
        ]
    return lines


def _context(r: Results) -> list[str]:
    lines = [
        H_CONTEXT,
        "",
        "Messages in each supervisor model input during one run (system prompt included), and how many "
        "each delegation adds. The tool-calling protocol's minimum is 2 (the call and its result). "
        "Worker inputs: messages each worker model received.",
        "",
    ]
    rows = []
    for g in r.context:
        added = g.added
        rows.append(
            [
                g.name,
                str(g.n),
                " ".join(map(str, g.supervisor_inputs)),
                " ".join(map(str, added)),
                _num(median(added)) if added else "n/a",
                " ".join(map(str, g.worker_inputs)),
            ]
        )
    lines += _table(
        ["Contender", "N", "supervisor input per call", "added per delegation", "median added", "worker inputs"], rows
    )
    return lines


@dataclass
class _ConvStats:
    """One contender's figures in one conversation scenario."""

    first: float  # median s/turn, first `window` turns of a fresh thread
    last: float  # median s/turn, last `window` turns of the long thread
    start: float  # median s/turn, the long thread's own first `window` turns
    ratio: float  # last / first
    ratio_cpu: float
    growth_first: float | None  # stored bytes added per turn, first `window` turns
    growth_last: float | None
    growth_max: int | None  # the largest one turn added (a DeltaChannel snapshot shows here)
    stored: int | None  # bytes of the long thread in the checkpoint tables
    compact: float | None  # median database file after checkpoint + VACUUM


def _conv_stats(c: Conversation, w: int) -> _ConvStats:
    last = [t for turn in c.turn_times[-w:] for t in turn]
    last_cpu = [t for turn in c.turn_cpu[-w:] for t in turn]
    stored = [b for b in c.stored if b is not None]
    growth = [b - a for a, b in zip(stored, stored[1:], strict=False)]
    return _ConvStats(
        first=median(c.fresh_times),
        last=median(last),
        start=median([t for turn in c.turn_times[:w] for t in turn]),
        ratio=ratio(median(last), median(c.fresh_times)),
        ratio_cpu=ratio(median(last_cpu), median(c.fresh_cpu)),
        growth_first=median(growth[:w]) if growth else None,
        growth_last=median(growth[-w:]) if growth else None,
        growth_max=max(growth) if growth else None,
        stored=stored[-1] - stored[0] if len(stored) > 1 else None,
        compact=median([f.compact_bytes for f in c.footprints]) if c.footprints else None,
    )


def _verdict(ok: bool) -> str:
    return "met" if ok else "**missed**"


def _conversation(run: ConversationRun) -> list[str]:
    spec = run.spec
    w = min(spec.window, spec.turns)
    script = spec.script()
    sizes = (
        f"~{spec.user_bytes} B user messages"
        if not (spec.worker_bytes or spec.final_bytes)
        else f"user message, worker answer (the delegation's tool result) and final answer of ~{spec.user_bytes}, "
        f"{len(script.worker_answer)} and {len(script.final_answer)} B (~{spec.text_per_turn / 1024:.1f} KB of "
        "text per turn)"
    )
    lines = [
        f"## {spec.turns}{H_CONVERSATION}{spec.title}",
        "",
        f"One thread per contender ({', '.join(spec.contenders)}), {spec.turns} turns with {sizes} and one "
        f"delegation per turn, on sqlite (ours and the floor on `SqliteCheckpointer`, the incumbent on "
        f"`AsyncSqliteSaver`); {spec.repeats} conversation(s), each on a fresh "
        f"database after a warm-up run on another thread (deleted before the database is measured). "
        f"*First {w}*: the first {w} turns of a fresh thread (in a database of its own), run interleaved with "
        f"the last {w} turns of the long thread so that both are measured side by side on a noisy machine; "
        f"*at the start* is the long thread's own first {w} turns, measured earlier. Medians over all "
        "conversations; *CPU time* is the process's CPU time per turn (all its threads), steadier than wall "
        f"time when other processes compete for the CPU. Target for ours: last/first <= {CONVERSATION_TARGET}x.",
        "",
    ]
    rows = []
    for c in run.contenders:
        st = _conv_stats(c, w)
        rows.append(
            [
                c.name,
                _ms(st.first),
                _ms(st.last),
                _x(st.ratio),
                _verdict(st.ratio <= CONVERSATION_TARGET) if c.name == "ours" else "",
                _x(st.ratio_cpu),
                _ms(st.start),
                _x(ratio(st.last, st.start)),
            ]
        )
    lines += _table(
        [
            "Contender",
            f"first {w} turns (ms/turn)",
            f"last {w} turns (ms/turn)",
            "last/first",
            f"target <= {CONVERSATION_TARGET}x",
            "last/first, CPU time",
            f"first {w} at the start (ms/turn)",
            "last / at the start",
        ],
        rows,
    )
    target = spec.storage_target
    lines += [
        "",
        "Storage. *Thread*: bytes of the long thread in the checkpoint tables (checkpoint + metadata blobs and "
        f"pending writes, all its namespaces), and their growth per turn over its first and last {w} turns "
        "(equal growth means linear storage), and the most one turn added (a turn that stores the whole "
        "history, e.g. a `DeltaChannel` snapshot, shows there). *Tables*: the same over the whole database, with row counts. "
        "*File as left*: the database file plus its write-ahead log when the savers closed; *file*: after "
        "`PRAGMA wal_checkpoint(TRUNCATE)` and `VACUUM`, the real size"
        + (f" (target for ours: <= {_bytes(target)})" if target else "")
        + ". Medians over the conversations. The floor keeps `MessagesState`'s plain `add_messages` channel, "
        "which stores the whole message list at every checkpoint: it is a floor for time per run, not for "
        "storage.",
        "",
    ]
    rows = []
    for c in run.contenders:
        st = _conv_stats(c, w)
        fp = c.footprints
        row = [
            c.name,
            _bytes(st.growth_first),
            _bytes(st.growth_last),
            _bytes(st.growth_max),
            _bytes(st.stored),
            _bytes(median([f.checkpoint_bytes for f in fp]) if fp else None),
            _bytes(median([f.write_bytes for f in fp]) if fp else None),
            _num(median([f.checkpoints for f in fp])) if fp else "n/a",
            _num(median([f.writes for f in fp])) if fp else "n/a",
            _bytes(median([f.file_bytes for f in fp]) if fp else None),
            _bytes(st.compact),
        ]
        if target:
            row.append(_verdict(st.compact is not None and st.compact <= target) if c.name == "ours" else "")
        row += [_bytes(st.compact / spec.turns if st.compact is not None else None), str(c.supervisor_input_last_turn)]
        rows.append(row)
    header = [
        "Contender",
        f"thread growth/turn, first {w}",
        f"thread growth/turn, last {w}",
        "thread growth, largest turn",
        "thread",
        "tables: checkpoints",
        "tables: writes",
        "checkpoint rows",
        "write rows",
        "file as left",
        "file",
    ]
    if target:
        header.append(f"target <= {_bytes(target)}")
    header += ["file per turn", "supervisor input at last turn (messages)"]
    lines += _table(header, rows)
    return lines


def _profile_block(p: Profile, heading: str, intro: str) -> list[str]:
    return [heading, "", intro, "", "```text", format_profile(p), "```"]


def _profile(r: Results) -> list[str]:
    p = r.profile
    if p is None:
        return []
    return _profile_block(
        p,
        f"{H_PROFILE} (N={p.n}, {p.kind})",
        "cProfile over the runs (profiler overhead included; an `async def`'s cumulative time counts only "
        "the time between its awaits). `python -m bench.profiling` prints the same for other settings.",
    )


def _concurrency(r: Results) -> list[str]:
    run = r.concurrency
    if run is None:
        return []
    spec = run.spec
    names = [n for n in CONTENDERS if run.results.get(n)]
    wall = {n: run.median_of(n, "wall") for n in names}
    lines = [
        f"{H_CONCURRENCY}: {spec.runs} runs at once, {spec.latency * 1000:.0f} ms model latency",
        "",
        f"Each contender in a fresh process (`python -m bench.concurrency <contender>`), {spec.rounds} "
        f"process(es) per contender, interleaved; medians over them. In each: {spec.warmup} warm-up runs, then "
        f"{spec.runs} runs started together with `asyncio.gather`, each on its own thread id, "
        f"{spec.delegations} delegation per run, `InMemorySaver`, every model call sleeping "
        f"{spec.latency * 1000:.0f} ms. *Ideal*: the model calls a run makes one after another "
        f"({spec.model_calls}) x latency = {spec.ideal:.2f} s. *CPU*: the process's CPU time during the batch (steadier than wall time when other processes "
        "compete for the cores; the batch is CPU-bound, so wall ~ CPU on a quiet machine); "
        "*GC*: time in the cyclic garbage collector during the batch (part of CPU). *Run latency*: from a "
        "run's first step to its end (quantiles in each process, median over the processes; the runs share "
        "one CPU-bound event loop, so they all end near the end of the batch: a starved run would stand out "
        "as a max far above p50). *Peak RSS*: the process's peak resident memory (`VmHWM`); "
        "*baseline*: after imports, build and warm-up; *per run*: (peak - baseline) / runs, and what is still "
        f"held after the batch (the checkpoints of {spec.runs} threads stay in memory) / runs. Targets for "
        f"ours: wall <= {CONCURRENCY_TARGET}x the floor's, peak RSS <= {_bytes(RSS_TARGET)}, no run starved.",
        "",
    ]
    rows = []
    for n in names:
        res = run.results[n]
        peak = run.median_of(n, "rss_peak")
        p50, p99 = run.latency(n, 0.5), run.latency(n, 0.99)
        is_ours = n == "ours"
        rows.append(
            [
                n,
                f"{wall[n]:.2f}",
                " ".join(f"{x.wall:.2f}" for x in res),
                _x(ratio(wall[n], spec.ideal)),
                _x(ratio(wall[n], wall.get("floor", math.nan))),
                _verdict(ratio(wall[n], wall.get("floor", math.nan)) <= CONCURRENCY_TARGET) if is_ours else "",
                _x(ratio(wall[n], wall.get("incumbent", math.nan))),
                f"{run.median_of(n, 'cpu'):.2f}",
                _ms(run.median_of(n, "cpu") / spec.runs),
                _x(ratio(run.median_of(n, "cpu"), run.median_of("floor", "cpu"))),
                f"{run.median_of(n, 'gc_seconds'):.2f} ({ratio(run.median_of(n, 'gc_seconds'), run.median_of(n, 'cpu')):.0%})",
                f"{p50:.2f} / {p99:.2f} / {run.latency(n, 1.0):.2f}",
                _x(ratio(p99, p50)),
                _bytes(peak),
                _verdict(peak <= RSS_TARGET) if is_ours else "",
                _bytes(run.median_of(n, "rss_baseline")),
                _bytes(run.median_of(n, "peak_per_run")),
                _bytes(run.median_of(n, "retained_per_run")),
            ]
        )
    lines += _table(
        [
            "Contender",
            "wall (s)",
            "wall per process (s)",
            "wall / ideal",
            "wall / floor",
            f"target <= {CONCURRENCY_TARGET}x",
            "wall / incumbent",
            "CPU (s)",
            "CPU ms/run",
            "CPU / floor",
            "GC (s, share of CPU)",
            "run latency p50 / p99 / max (s)",
            "p99/p50",
            "peak RSS",
            f"target <= {_bytes(RSS_TARGET)}",
            "baseline RSS",
            "peak per run",
            "held per run",
        ],
        rows,
    )
    if run.profile is not None:
        lines += [""] + _profile_block(
            run.profile,
            "### Profile of ours under concurrency",
            "One more process of ours under cProfile (profiler overhead included, so slower than above). "
            "A CPU-bound batch: the model latency overlaps, the Python work per run does not. Time the "
            "garbage collector takes is counted in whatever function allocated when it ran.",
        )
    return lines


def _agui(r: Results) -> list[str]:
    a = r.agui
    if a is None:
        return []
    spec = a.spec
    lines = [f"{H_AGUI}: {spec.clients} concurrent clients over loopback", ""]
    if not a.available:
        return lines + [
            f"Not available: `{a.reason}`. The scenario starts `python -m bench.agui` (ours behind "
            "`supervisor_graph.agui.add_agui_endpoint`, FastAPI on uvicorn) and reports here once that "
            "module exists."
        ]
    per_run = ""
    cells = [c for c in r.timing if c.kind == "memory" and c.n == spec.delegations]
    if cells:
        per_run = (
            f" For reference, ours without HTTP, one run at a time (per-run wall time above, memory, "
            f"N={spec.delegations}): {1 / median(cells[0].samples['ours']):.0f} runs/s."
        )
    lines += [
        f"The server (`python -m bench.agui`): ours with {spec.delegations} delegation per run, "
        f"{spec.latency * 1000:.0f} ms model latency, `InMemorySaver`, behind `add_agui_endpoint` in a "
        "FastAPI app on uvicorn, in its own process on a free loopback port. The clients: one "
        f"`httpx.AsyncClient` in the benchmark's process, {spec.clients} concurrent loops streaming POSTs "
        f"of a `RunAgentInput` (a new thread per run) until {spec.runs} runs are done, after {spec.warmup} "
        "warm-up runs. *First event*: request sent to the first SSE event; *run*: request sent to the "
        "terminal event; each run is checked (success outcome, one tool result per delegation, the final "
        "text). *Server CPU*: the server process's CPU time over the measured runs, per run (steadier than "
        "runs/s on a busy machine). Client and server share the machine's cores." + per_run,
        "",
    ]
    lines += _table(
        [
            "clients",
            "runs",
            "failed",
            "runs/s",
            "first event median (ms)",
            "first event p90 (ms)",
            "first event p99 (ms)",
            "run median (ms)",
            "run p99 (ms)",
            "server CPU ms/run",
            "events per run",
            "server RSS after warm-up",
            "server peak RSS",
        ],
        [
            [
                str(spec.clients),
                str(len(a.run_time)),
                str(len(a.errors)),
                f"{a.runs_per_second:.1f}",
                _ms(median(a.first_event)),
                _ms(p90(a.first_event)),
                _ms(quantile(a.first_event, 0.99)),
                _ms(median(a.run_time)),
                _ms(quantile(a.run_time, 0.99)),
                _ms(a.server_cpu / len(a.run_time) if a.run_time else math.nan),
                _num(median(a.events)) if a.events else "n/a",
                _bytes(a.server_rss_start),
                _bytes(a.server_rss_peak),
            ]
        ],
    )
    if a.errors:
        lines += ["", f"First failures: {'; '.join(sorted(set(a.errors))[:3])}"]
    return lines


# -- targets --------------------------------------------------------------------------


@dataclass
class Target:
    what: str
    target: str
    measured: str
    met: bool | None  # None: reported, no pass/fail


def targets(r: Results) -> list[Target]:
    out: list[Target] = []
    if r.timing:
        cells = [(f"{c.kind} N={c.n}", c.samples) for c in r.timing]
        for other, limit in (("floor", TIMING_FLOOR_TARGET), ("incumbent", TIMING_INCUMBENT_TARGET)):
            ratios = [(label, ratio(median(s["ours"]), median(s[other]))) for label, s in cells]
            out.append(
                Target(
                    f"per-run median time, ours / {other}",
                    f"<= {limit}x",
                    ", ".join(f"{_x(q)} ({label})" for label, q in ratios),
                    all(q <= limit for _, q in ratios),
                )
            )
    ours_growth = [g for g in r.context if g.name == "ours"]
    if ours_growth and ours_growth[0].added:
        added = ours_growth[0].added
        out.append(
            Target(
                "supervisor context growth per delegation",
                "2 messages",
                f"{_num(median(added))}",
                all(a == 2 for a in added),
            )
        )
    out += _write_targets(r)
    out += _peer_targets(r)
    out += _one_path_targets(r)
    for run in r.conversations:
        w = min(run.spec.window, run.spec.turns)
        for c in run.contenders:
            if c.name != "ours":
                continue
            st = _conv_stats(c, w)
            out.append(
                Target(
                    f"{run.spec.turns}-turn conversation: last {w} turns / first {w}",
                    f"<= {CONVERSATION_TARGET}x",
                    _x(st.ratio),
                    st.ratio <= CONVERSATION_TARGET,
                )
            )
            if run.spec.storage_target:
                out.append(
                    Target(
                        f"{run.spec.turns}-turn conversation: sqlite file after VACUUM",
                        f"<= {_bytes(run.spec.storage_target)}",
                        _bytes(st.compact),
                        st.compact is not None and st.compact <= run.spec.storage_target,
                    )
                )
    cr = r.concurrency
    if cr is not None and cr.results.get("ours"):
        spec = cr.spec
        q = ratio(cr.median_of("ours", "wall"), cr.median_of("floor", "wall"))
        peak = cr.median_of("ours", "rss_peak")
        out += [
            Target(
                f"{spec.runs} concurrent runs: wall, ours / floor",
                f"<= {CONCURRENCY_TARGET}x",
                _x(q),
                q <= CONCURRENCY_TARGET,
            ),
            Target(
                f"{spec.runs} concurrent runs: peak RSS of ours",
                f"<= {_bytes(RSS_TARGET)}",
                _bytes(peak),
                peak <= RSS_TARGET,
            ),
            Target(
                f"{spec.runs} concurrent runs: no run starved",
                "p99 run latency reported",
                f"p50 {cr.latency('ours', 0.5):.2f} s, p99 {cr.latency('ours', 0.99):.2f} s, "
                f"max {cr.latency('ours', 1.0):.2f} s (batch wall {cr.median_of('ours', 'wall'):.2f} s)",
                None,
            ),
        ]
    if r.agui is not None:
        a = r.agui
        measured = (
            f"{a.runs_per_second:.1f} runs/s, first event median {_ms(median(a.first_event))} ms, "
            f"p99 {_ms(quantile(a.first_event, 0.99))} ms"
            if a.available
            else "not available yet"
        )
        out.append(Target(f"AG-UI endpoint, {a.spec.clients} clients", "reported", measured, None))
    return out


def _peer_targets(r: Results) -> list[Target]:
    """Ours against every other Python framework, in the peers' interleaved run."""
    if not r.peers or not r.peers["cells"]:
        return []
    cells = r.peers["cells"]
    names = [n for n in next(iter(cells.values())) if n not in ("ours", "ours_graph", "incumbent", "floor", "floor_stock")]
    if not names:
        return []
    ratios = [
        (f"{_PEER_LABELS.get(name, name)}, {kind} N={n}", ratio(median(s["ours"]), median(s[name])))
        for name in names
        for (kind, n), s in cells.items()
    ]
    worst = max(ratios, key=lambda x: x[1])
    return [
        Target(
            "per-run median time, ours / every other Python framework (Peers section)",
            f"<= {PEER_TARGET}x",
            f"worst {_x(worst[1])} ({worst[0]}); {len(ratios)} cells",
            all(q <= PEER_TARGET for _, q in ratios),
        )
    ]


def _write_targets(r: Results) -> list[Target]:
    """Checkpoints and writes per delegation: ours <= 3 checkpoints (the bench agent sets no hooks)."""
    ns = sorted({w.n for w in r.writes})
    if len(ns) < 2:
        return []
    lo, hi = ns[0], ns[-1]
    by = {(w.name, w.kind, w.n): w.counts for w in r.writes}
    parts, ok = [], True
    for kind in dict.fromkeys(w.kind for w in r.writes):
        per = {}
        for name in ("ours", "floor"):
            a, b = by.get((name, kind, lo)), by.get((name, kind, hi))
            if a is None or b is None:
                return []
            d = hi - lo
            per[name] = (
                (b.checkpoints - a.checkpoints) / d,
                (b.writes - a.writes) / d,
                (b.total_bytes - a.total_bytes) / d,
            )
        ok = ok and per["ours"][0] <= CHECKPOINTS_PER_DELEGATION_TARGET
        parts.append(
            f"{kind}: ours {_num(per['ours'][0])} checkpoints + {_num(per['ours'][1])} writes "
            f"({_bytes(per['ours'][2])}), floor {_num(per['floor'][0])} + {_num(per['floor'][1])} "
            f"({_bytes(per['floor'][2])})"
        )
    return [
        Target(
            "checkpoints per delegation (no hooks set)",
            f"<= {CHECKPOINTS_PER_DELEGATION_TARGET}",
            "; ".join(parts),
            ok,
        )
    ]


def _targets(r: Results, found: list[Target]) -> list[str]:
    rows = [[t.what, t.target, t.measured, "reported" if t.met is None else _verdict(t.met)] for t in found]
    note = " (quick run: the verdicts mean nothing)" if r.config.quick else ""
    return [
        H_TARGETS,
        "",
        f"Issues 7 and 17's targets, from the sections below{note}.",
        "",
        *_table(["Figure", "Target", "Measured", "Verdict"], rows, numeric=False),
    ]


def _what_was_tried(found: list[Target]) -> list[str]:
    missed = [t for t in found if t.met is False]
    lines = [H_TRIED, ""]
    if missed:
        lines += ["Targets missed in this run:", ""]
        lines += [f"- {t.what}: {t.measured} (target {t.target})" for t in missed]
        lines.append("")
    notes = NOTES.read_text(encoding="utf-8").strip() if NOTES.is_file() else ""
    if notes:
        lines.append(notes)
    else:
        lines.append(
            "_Design notes (what was tried, before/after figures, why a target cannot be met): to be written. "
            f"Put them in `bench/{NOTES.name}`; `python -m bench` copies that file here on every run._"
        )
    return lines


def render(r: Results) -> str:
    cfg = r.config
    intro = [
        "# Benchmark results" + (" (quick smoke run: not real numbers)" if cfg.quick else ""),
        "",
        "Written by `python -m bench" + (" --quick" if cfg.quick else "") + "` (SPEC §18). The contenders make "
        "the same model calls with `ScriptedChatModel`s (zero latency, except in the concurrency scenario): "
        "**ours** (`supervisor_graph.Agent` through `generate`), **ours_graph** (the same agent's compiled graph "
        "driven by `graph.ainvoke`, as Studio, `langgraph dev`, Aegra and embedding apps run it), the "
        "**incumbent** (`langgraph_supervisor.create_supervisor` over "
        "`create_react_agent` workers, defaults) and the **floor** (a minimal hand-written `StateGraph`: a "
        "supervisor node and a worker node). All use the same checkpointer kind in each measurement. Times "
        "are in ms unless stated.",
    ]
    found = targets(r)
    sections = [
        _machine(r),
        _targets(r, found),
        _timing(r),
        _writes(r),
        _context(r),
        _peers(r),
        _one_path(r),
        _guard(r),
        _working_memory(r),
        *(_conversation(run) for run in r.conversations),
        _profile(r),
        _concurrency(r),
        _agui(r),
        _scaleout(r),
        _what_was_tried(found),
    ]
    out = intro
    for section in sections:
        if section:
            out += ["", *section]
    return "\n".join(out) + "\n"


_PEER_LABELS = {
    "ours": "supervisor-graph",
    "ours_graph": "supervisor-graph, compiled graph (graph.ainvoke)",
    "incumbent": "langgraph-supervisor",
    "floor": "floor (hand-written graph)",
    "floor_stock": "floor on LangGraph's AsyncSqliteSaver",
    "create_agent": "LangChain create_agent, subagents as tools",
    "openai_agents": "openai-agents, agents as tools",
    "deepagents": "deepagents task tool (default middleware)",
    "deepagents_min": "deepagents SubAgentMiddleware only",
}
_PEER_DISTS = {
    "create_agent": "langchain",
    "openai_agents": "openai-agents",
    "deepagents": "deepagents",
    "deepagents_min": "deepagents",
}


def _peers(r: Results) -> list[str]:
    if not r.peers:
        return []
    cells = r.peers["cells"]
    names = list(next(iter(cells.values()))) if cells else []
    versions = ", ".join(
        f"{_PEER_DISTS[n]} {_version(_PEER_DISTS[n])}" for n in dict.fromkeys(names) if n in _PEER_DISTS
    )
    lines = [
        "## Peers: every framework a user might pick instead",
        "",
        "Median ms per run, all contenders interleaved (each round in a fresh random order) on fresh threads, every run checked (N+1 "
        f"supervisor calls, N worker calls, the final answer). Versions: {versions}. The issue's targets: "
        "ours <= 0.8x every Python peer, <= 0.5x langgraph-supervisor, <= 1.3x the floor.",
        "",
    ]
    header = ["Contender", *(f"{kind} N={n}" for kind, n in cells), *(f"ours/x {kind} N={n}" for kind, n in cells)]
    rows = []
    for name in names:
        row = [_PEER_LABELS.get(name, name)]
        row += [_ms(median(samples[name])) for samples in cells.values()]
        row += [_x(ratio(median(samples["ours"]), median(samples[name]))) for samples in cells.values()]
        rows.append(row)
    lines += _table(header, rows, numeric=False)
    if r.peers.get("missing"):
        lines += ["", f"Not installed, so not measured: {', '.join(r.peers['missing'])}."]
    return lines + _mastra(r, {key: median(samples["ours"]) for key, samples in cells.items()})


def _mastra(r: Results, ours: dict[tuple[str, int], float]) -> list[str]:
    m = r.mastra
    if m is None:
        return []
    lines = ["", "### Mastra (Node, its own process)", ""]
    if m.unavailable:
        return lines + [f"**Not measured: {m.unavailable}.** Mastra is optional (it needs Node.js and npm)."]
    versions = ", ".join(f"{k} {v}" for k, v in m.versions.items())
    lines += [
        f"`bench/mastra/bench.mjs` ({versions}): Mastra's own `agents: {{...}}` subagents on `ai/test`'s "
        "`MockLanguageModelV4`, `Memory` on `InMemoryStore` (memory) or `LibSQLStore` on a file (sqlite), every run "
        "checked the same way. It runs after the Python contenders, not interleaved with them. Each runtime's "
        f"baseline is 3 raw calls of its scripted model with no framework: Node {_ms(m.node_base)} ms, Python "
        f"{_ms(m.python_base)} ms (LangChain's `ainvoke` on `ScriptedChatModel`). *overhead ratio*: (ours - Python "
        "baseline) / (Mastra - Node baseline), so neither side is charged for its model mock. Not part of the "
        "<= 0.8x target, which is for the Python peers.",
        "",
    ]
    rows = []
    for (kind, n), samples in m.cells.items():
        mastra = median(samples)
        mine = ours.get((kind, n))
        rows.append(
            [
                f"{kind} N={n}",
                _ms(mastra),
                _ms(mine) if mine is not None else "-",
                _x(ratio(mine, mastra)) if mine is not None else "-",
                _x(ratio(mine - m.python_base, mastra - m.node_base)) if mine is not None else "-",
            ]
        )
    return lines + _table(["Cell", "Mastra median", "ours median", "ours / Mastra", "overhead ratio"], rows, numeric=False)


def _guard(r: Results) -> list[str]:
    return render_guard(r.guard)[:-1]  # the section's blank line comes from the join


def _working_memory(r: Results) -> list[str]:
    if not r.working_memory:
        return []
    lines = [
        H_WORKING_MEMORY,
        "",
        "What working memory costs (SPEC §8). Ours only, one delegation, every variant making the same "
        "model calls (the update rides in the turn that delegates), interleaved, each run on a fresh thread "
        "and resource. `off`: no working memory (no state channel, no store call). `read only`: resource "
        "scope, never updated (one store read per model call). `one update`: the value written once per run "
        "(resource scope: a store write; thread scope: a state channel, no store call).",
        "",
    ]
    header = [
        "Checkpointer",
        *(f"{v} median" for v in VARIANTS),
        *(f"{v} / off" for v in VARIANTS[1:]),
        "store reads per run",
    ]
    rows = []
    for cell in r.working_memory:
        off = median(cell.samples["off"])
        reads = ", ".join(f"{v}: {cell.store_reads[v]:g}" for v in VARIANTS) if cell.store_reads else "(not counted)"
        rows.append(
            [
                cell.kind,
                *(_ms(median(cell.samples[v])) for v in VARIANTS),
                *(_x(ratio(median(cell.samples[v]), off)) for v in VARIANTS[1:]),
                reads,
            ]
        )
    return lines + _table(header, rows, numeric=False)


def _scaleout(r: Results) -> list[str]:
    s = r.scaleout
    if s is None:
        return []
    lines = [f"{H_SCALEOUT}: one server, then two sharing one database", ""]
    if not s.available:
        return lines + [f"Not available: {s.reason}."]
    lines += [
        f"The example supervisor (`aegra.json`, scripted models, no latency) on Aegra {s.versions.get('aegra-api', '')} "
        "(`aegra serve` from `.venv-aegra`, Python 3.12; `REDIS_BROKER_ENABLED=true`, 3 workers of 10 jobs per "
        f"server), first one server, then two sharing one fresh Postgres database and one Redis queue. The same "
        f"client load each time: {s.spec.clients} concurrent `langgraph_sdk` clients in the benchmark's process, "
        f"`runs.wait` on a new thread each, until {s.spec.runs} runs are done (after {s.spec.warmup} warm-up runs "
        "per server), round-robin over the servers; each answer is checked. On this 2-core machine the servers "
        "compete for the same cores as the clients, Postgres and Redis, so the figure shows what a second server "
        "costs and that nothing fails rather than a speed-up. Latency is mostly the server's: its Postgres-backed "
        "run records, the Redis queue and `runs.wait` polling (the graph itself runs in a few ms, see above).",
        "",
    ]
    rows = [
        [
            str(row["servers"]),
            f"{row['runs_per_s']:.1f}",
            f"{row['p50'] * 1000:.0f}",
            f"{row['p99'] * 1000:.0f}",
            str(row["failures"]),
        ]
        for row in summary(s)
    ]
    return lines + _table(["servers", "runs/s", "latency p50 (ms)", "latency p99 (ms)", "failed runs"], rows)


def _color(name: str) -> str:
    """The same colour for a contender in every panel."""
    return f"C{CONTENDERS.index(name)}"


def write_chart(r: Results, path: Path) -> bool:
    """Write a PNG summary; False when matplotlib is not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    panels = 1 + len(r.conversations) + (r.concurrency is not None)
    cols = 2
    fig, axes = plt.subplots((panels + 1) // cols, cols, figsize=(12, 4.5 * ((panels + 1) // cols)), squeeze=False)
    flat = list(axes.flat)
    for ax in flat[panels:]:
        ax.set_visible(False)
    ax = flat[0]
    labels = [f"{c.kind}\nN={c.n}" for c in r.timing]
    width = 0.8 / len(CONTENDERS)
    for i, name in enumerate(CONTENDERS):
        xs = [j + (i - (len(CONTENDERS) - 1) / 2) * width for j in range(len(r.timing))]
        ys = [median(c.samples[name]) * 1000 for c in r.timing]
        errs = [(p90(c.samples[name]) - median(c.samples[name])) * 1000 for c in r.timing]
        ax.bar(xs, ys, width, yerr=[[0] * len(errs), errs], label=name, capsize=2, color=_color(name))
    ax.set_xticks(range(len(r.timing)), labels)
    ax.set_ylabel("ms per run (median, whisker to p90)")
    ax.set_title("Per-run wall time")
    ax.legend()
    for ax, run in zip(flat[1:], r.conversations, strict=False):
        for c in run.contenders:
            ys = [median(t) * 1000 for t in c.turn_times]
            ax.plot(range(1, len(ys) + 1), ys, label=c.name, color=_color(c.name))
        ax.set_xlabel("turn")
        ax.set_ylabel("ms per turn (median over conversations)")
        ax.set_title(f"{run.spec.turns}-turn conversation, sqlite")
        ax.legend()
    if r.concurrency is not None:
        cr = r.concurrency
        ax = flat[1 + len(r.conversations)]
        names = [n for n in CONTENDERS if cr.results.get(n)]
        ax.bar(names, [cr.median_of(n, "wall") for n in names], color=[_color(n) for n in names])
        ax.axhline(cr.spec.ideal, color="grey", linestyle="--", label=f"ideal ({cr.spec.ideal:.2f} s)")
        ax.set_ylabel("s for the whole batch (median over processes)")
        ax.set_title(f"{cr.spec.runs} concurrent runs, {cr.spec.latency * 1000:.0f} ms model latency")
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


# -- issue 23: one execution path ---------------------------------------------------

ONE_PATH_PEER_TARGET = 0.8  # ours (facade and compiled graph) / create_agent, openai-agents
ONE_PATH_FLOOR_TARGET = 1.15  # compiled graph / floor, tool-less workers
ONE_PATH_TOOL_FLOOR_TARGET = 1.2  # compiled graph / floor, workers with a tool
ONE_PATH_INCUMBENT_TARGET = 0.5  # compiled graph / langgraph-supervisor
ONE_PATH_FACADE_FLOOR_TARGET = 1.15  # facade / floor, workers with and without tools (issue 41)
ONE_PATH_FACADE_GRAPH_TARGET = 1.05  # facade / the compiled graph it drives (issue 41)
ONE_PATH_CHECKPOINTS = 3  # per extra delegation whose worker calls a tool


def _ratios(cells: dict[tuple[str, int], dict[str, list[float]]], a: str, b: str) -> list[tuple[str, float]]:
    return [(f"{kind} N={n}", ratio(median(s[a]), median(s[b]))) for (kind, n), s in cells.items() if a in s and b in s]


def _per_extra(counts: dict[int, int]) -> float | None:
    lo, hi = min(counts), max(counts)
    return (counts[hi] - counts[lo]) / (hi - lo) if hi > lo else None


def _one_path_targets(r: Results) -> list[Target]:
    one = r.one_path
    if one is None or not one.tools:
        return []
    out: list[Target] = []

    def target(what: str, limit: float, ratios: list[tuple[str, float]]) -> None:
        if ratios:
            worst = max(ratios, key=lambda x: x[1])
            out.append(Target(what, f"<= {limit}x", f"worst {_x(worst[1])} ({worst[0]}); {len(ratios)} cells", all(q <= limit for _, q in ratios)))

    scenarios = (("tool-less workers", one.tool_less["cells"]), ("workers with tools", one.tools["cells"]))
    for scenario, cells in scenarios:
        for ours in ("ours", "ours_graph"):
            peers = [p for p in ("create_agent", "openai_agents") if cells and p in next(iter(cells.values()))]
            ratios = [(f"{_PEER_LABELS[p]}, {label}", q) for p in peers for label, q in _ratios(cells, ours, p)]
            target(f"{scenario}: {_PEER_LABELS[ours]} / create_agent and openai-agents", ONE_PATH_PEER_TARGET, ratios)
    target("tool-less workers: compiled graph / floor", ONE_PATH_FLOOR_TARGET, _ratios(one.tool_less["cells"], "ours_graph", "floor"))
    target("workers with tools: compiled graph / floor whose worker calls the tool", ONE_PATH_TOOL_FLOOR_TARGET, _ratios(one.tools["cells"], "ours_graph", "floor"))
    target("tool-less workers: compiled graph / langgraph-supervisor", ONE_PATH_INCUMBENT_TARGET, _ratios(one.tool_less["cells"], "ours_graph", "incumbent"))
    for scenario, cells in scenarios:
        target(f"{scenario}: facade / floor", ONE_PATH_FACADE_FLOOR_TARGET, _ratios(cells, "ours", "floor"))
        target(f"{scenario}: facade / the compiled graph it drives", ONE_PATH_FACADE_GRAPH_TARGET, _ratios(cells, "ours", "ours_graph"))
    extra = {f"{name} {kind}": _per_extra(c) for (name, kind), c in one.checkpoints.items()}
    known = {k: v for k, v in extra.items() if v is not None}
    if known:
        out.append(
            Target(
                "checkpoints per extra delegation whose worker calls a tool",
                f"<= {ONE_PATH_CHECKPOINTS}",
                ", ".join(f"{v:g} ({k})" for k, v in known.items()),
                all(v <= ONE_PATH_CHECKPOINTS for v in known.values()),
            )
        )
    return out


def _timing_table(cells: dict[tuple[str, int], dict[str, list[float]]]) -> list[str]:
    names = list(next(iter(cells.values()))) if cells else []
    header = ["Contender", *(f"{kind} N={n}" for kind, n in cells)]
    header += [f"{who}/x {kind} N={n}" for who in ("ours", "graph") for kind, n in cells]
    rows = []
    for name in names:
        row = [_PEER_LABELS.get(name, name), *(_ms(median(s[name])) for s in cells.values())]
        row += [_x(ratio(median(s[who]), median(s[name]))) for who in ("ours", "ours_graph") for s in cells.values()]
        rows.append(row)
    return _table(header, rows, numeric=False)


def _one_path(r: Results) -> list[str]:
    one = r.one_path
    if one is None or not one.tools:
        return []
    lines = [
        "## One execution path: the facade and the compiled graph, workers with and without tools (issue 23)",
        "",
        "Median ms per run, every contender interleaved (each round in a fresh random order) on fresh threads, every run checked (N+1 "
        "supervisor calls, N or 2N worker calls, N tool runs with tools, the final answer). **ours** runs through "
        "the facade (`generate`: thread lease, input checks, transcript repair, durability `sync` on sqlite); "
        "**compiled graph** is `agent.compile(checkpointer=...)` driven by `graph.ainvoke` (default durability), "
        "as LangGraph Studio, `langgraph dev`, Aegra and embedding apps run it. Leaf subagents, tools included, "
        "run inside their delegation's node under both (SPEC §23). The floor's worker node makes the same "
        "calls by hand (model, tool, model).",
        "",
        "### Tool-less workers",
        "",
        *_timing_table(one.tool_less["cells"]),
        "",
        "### Workers with tools (each worker calls one tool, then answers)",
        "",
        *_timing_table(one.tools["cells"]),
    ]
    if one.checkpoints:
        rows = [
            [_PEER_LABELS.get(name, name), kind, *(str(v) for v in counts.values()), f"{_per_extra(counts) or 0:g}"]
            for (name, kind), counts in one.checkpoints.items()
        ]
        ns = list(next(iter(one.checkpoints.values())))
        lines += [
            "",
            "### Checkpoints per run, workers with tools",
            "",
            *_table(["Contender", "storage", *(f"N={n}" for n in ns), "per extra delegation"], rows, numeric=False),
        ]
    return lines
