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

from bench.contenders import CONTENDERS
from bench.profiling import Profile, format_profile
from bench.savers import Counts
from bench.scenarios import Config, ContextGrowth, Conversation, TimingCell, WriteCount
from bench.stats import median, p90, ratio

__all__ = ["HEADINGS", "Results", "machine_info", "render", "write_chart"]

ROOT = Path(__file__).resolve().parents[1]

H_MACHINE = "## Machine"
H_TIMING = "## Per-run wall time"
H_WRITES = "## Checkpoint writes and bytes per delegation"
H_CONTEXT = "## Supervisor context growth"
H_CONVERSATION = "-turn conversation on sqlite"  # preceded by "## <turns>"
H_PROFILE = "## Profile of ours"
HEADINGS = (H_MACHINE, H_TIMING, H_WRITES, H_CONTEXT, H_CONVERSATION)
CONVERSATION_TARGET = 1.2


@dataclass
class Results:
    config: Config
    machine: dict[str, str]
    timing: list[TimingCell] = field(default_factory=list)
    writes: list[WriteCount] = field(default_factory=list)
    context: list[ContextGrowth] = field(default_factory=list)
    conversation: list[Conversation] = field(default_factory=list)
    profile: Profile | None = None
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
    mode = (
        f"{'quick' if cfg.quick else 'full'}: {cfg.iterations} timed runs per contender per cell after "
        f"{cfg.warmup} warm-up runs; {cfg.turn_repeats} conversation(s) of {cfg.turns} turns; "
        f"total bench time {r.elapsed:.0f} s"
    )
    rows = [[k, v] for k, v in r.machine.items()] + [["Mode", mode]]
    return [H_MACHINE, "", *_table(["Item", "Value"], rows, numeric=False)]


def _timing(r: Results) -> list[str]:
    lines = [
        H_TIMING,
        "",
        "Milliseconds per `generate` / `ainvoke`, each run on a fresh thread, contenders interleaved "
        "round-robin (the starting contender rotates every round) after warm-up. Every run is checked: "
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


def _conversation(r: Results) -> list[str]:
    cfg = r.config
    w = min(cfg.window, cfg.turns)
    lines = [
        f"## {cfg.turns}{H_CONVERSATION}",
        "",
        f"One thread per contender, {cfg.turns} calls with ~{cfg.message_bytes} B user messages and one "
        f"delegation per turn, on `AsyncSqliteSaver`; {cfg.turn_repeats} conversation(s), each on a fresh "
        f"database after a warm-up run on another thread. *First {w}*: the first {w} turns of a fresh "
        f"thread (in a database of its own), run interleaved with the last {w} turns of the long thread so "
        f"that both are measured side by side on a noisy machine; *at the start* is the long thread's own "
        f"first {w} turns, measured earlier. Medians over all conversations; *CPU time* is the process's "
        "CPU time per turn (all its threads), steadier than wall time when other processes compete for "
        f"the CPU. Target for ours: last/first <= {CONVERSATION_TARGET}. Storage: bytes of the long thread in the checkpoint tables (all its "
        f"namespaces), growth per turn over its first and last {w} turns (equal growth means linear "
        f"storage), and the database file after the conversation (WAL included). The floor keeps "
        "`MessagesState`'s plain `add_messages` channel, which stores the whole message list at every "
        "checkpoint: it is a floor for time per run, not for storage.",
        "",
    ]
    rows = []
    for c in r.conversation:
        start = [t for turn in c.turn_times[:w] for t in turn]
        last = [t for turn in c.turn_times[-w:] for t in turn]
        q = ratio(median(last), median(c.fresh_times))
        last_cpu = [t for turn in c.turn_cpu[-w:] for t in turn]
        q_cpu = ratio(median(last_cpu), median(c.fresh_cpu))
        stored = [b for b in c.stored if b is not None]
        growth = [b - a for a, b in zip(stored, stored[1:], strict=False)]
        total = stored[-1] - stored[0] if len(stored) > 1 else None
        verdict = ""
        if c.name == "ours":
            verdict = "ok" if q <= CONVERSATION_TARGET else "over target"
        rows.append(
            [
                c.name,
                _ms(median(c.fresh_times)),
                _ms(median(last)),
                _x(q),
                verdict,
                _x(q_cpu),
                _ms(median(start)),
                _x(ratio(median(last), median(start))),
                _bytes(median(growth[:w]) if growth else None),
                _bytes(median(growth[-w:]) if growth else None),
                _bytes(total),
                _bytes(median(c.file_bytes) if c.file_bytes else None),
                str(c.supervisor_input_last_turn),
            ]
        )
    lines += _table(
        [
            "Contender",
            f"first {w} turns (ms/turn)",
            f"last {w} turns (ms/turn)",
            "last/first",
            "target",
            "last/first, CPU time",
            f"first {w} at the start (ms/turn)",
            "last / at the start",
            f"stored growth/turn, first {w}",
            f"stored growth/turn, last {w}",
            "stored for the thread",
            "sqlite file after all turns",
            "supervisor input at last turn (messages)",
        ],
        rows,
    )
    return lines


def _profile(r: Results) -> list[str]:
    p = r.profile
    if p is None:
        return []
    return [
        f"{H_PROFILE} (N={p.n}, {p.kind})",
        "",
        "cProfile over the runs (profiler overhead included; an `async def`'s cumulative time counts only "
        "the time between its awaits). `python -m bench.profiling` prints the same for other settings.",
        "",
        "```text",
        format_profile(p),
        "```",
    ]


def _not_covered() -> list[str]:
    return [
        "## Not measured here yet",
        "",
        "From SPEC §18: storage over a 150-turn conversation (`python -m bench --turns 150` runs the "
        "conversation scenario that long; add `--conversation-contenders ours,floor` to leave out the "
        "incumbent, whose storage grows quadratically), 1,000 concurrent runs with 50 ms simulated model latency "
        "(wall time against steps x latency, peak memory), and the AG-UI endpoint's throughput and "
        "first-event latency.",
    ]


def render(r: Results) -> str:
    cfg = r.config
    intro = [
        "# Benchmark results" + (" (quick smoke run: not real numbers)" if cfg.quick else ""),
        "",
        "Written by `python -m bench" + (" --quick" if cfg.quick else "") + "` (SPEC §18). Three contenders make "
        "the same model calls with zero-latency `ScriptedChatModel`s: **ours** (`supervisor_graph.Agent`), "
        "the **incumbent** (`langgraph_supervisor.create_supervisor` over `create_react_agent` workers, "
        "defaults) and the **floor** (a minimal hand-written `StateGraph`: a supervisor node and a worker "
        "node). All use the same checkpointer kind in each measurement. Times are in ms.",
    ]
    sections = [_machine(r), _timing(r), _writes(r), _context(r), _conversation(r), _profile(r), _not_covered()]
    out = intro
    for section in sections:
        if section:
            out += ["", *section]
    return "\n".join(out) + "\n"


def write_chart(r: Results, path: Path) -> bool:
    """Write a PNG summary; False when matplotlib is not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    labels = [f"{c.kind}\nN={c.n}" for c in r.timing]
    width = 0.8 / len(CONTENDERS)
    for i, name in enumerate(CONTENDERS):
        xs = [j + (i - (len(CONTENDERS) - 1) / 2) * width for j in range(len(r.timing))]
        ys = [median(c.samples[name]) * 1000 for c in r.timing]
        errs = [(p90(c.samples[name]) - median(c.samples[name])) * 1000 for c in r.timing]
        ax1.bar(xs, ys, width, yerr=[[0] * len(errs), errs], label=name, capsize=2)
    ax1.set_xticks(range(len(r.timing)), labels)
    ax1.set_ylabel("ms per run (median, whisker to p90)")
    ax1.set_title("Per-run wall time")
    ax1.legend()
    for c in r.conversation:
        ax2.plot(range(1, len(c.turn_times) + 1), [median(t) * 1000 for t in c.turn_times], label=c.name)
    ax2.set_xlabel("turn")
    ax2.set_ylabel("ms per turn (median over conversations)")
    ax2.set_title(f"{r.config.turns}-turn conversation, sqlite")
    ax2.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True
