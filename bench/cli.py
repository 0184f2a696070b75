"""Command line: `python -m bench [--quick] [--out PATH] ...`, and `python -m bench soak ...` (bench/soak.py)."""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
import warnings
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench.aegra import ScaleoutSpec, scaleout
from bench.agui import AguiSpec, agui_endpoint
from bench.concurrency import ConcurrencySpec, concurrency
from bench.contenders import CONTENDERS
from bench.guard import measure as measure_guard
from bench.guard import summary as guard_summary
from bench.guard import write as write_guard
from bench.mastra_peer import mastra_timing
from bench.one_path import measure as measure_one_path
from bench.peers import peer_timing
from bench.profiling import profile_ours
from bench.report import Results, machine_info, render, write_chart
from bench.scenarios import Config, ConversationSpec, checkpoint_writes, context_growth, conversation, timing
from bench.working_memory import working_memory_cost

__all__ = ["main"]

BENCH_DIR = Path(__file__).resolve().parent


def _progress(message: str) -> None:
    print(message, flush=True)


SCENARIOS = (
    "timing",
    "writes",
    "context",
    "working_memory",
    "peers",
    "one_path",
    "guard",
    "conversation",
    "long",
    "profile",
    "concurrency",
    "agui",
    "scaleout",
)
MB = 1024 * 1024


def _contenders(value: str) -> tuple[str, ...]:
    names = tuple(n.strip() for n in value.split(",") if n.strip())
    if not names or set(names) - set(CONTENDERS):
        raise argparse.ArgumentTypeError(f"choose among {', '.join(CONTENDERS)}")
    return names


# The full scenarios; --quick scales them down to seconds.
CONVERSATION = ConversationSpec(
    title="", label="conversation", turns=40, repeats=8, window=5, contenders=CONTENDERS
)
LONG_CONVERSATION = ConversationSpec(
    title=", ~3 KB of text per turn",
    label="long",
    turns=150,
    repeats=3,
    window=10,
    contenders=("ours", "floor"),  # the incumbent's storage grows quadratically: 150 turns of it take long
    worker_bytes=1024,
    final_bytes=1024,
    storage_target=3 * MB,
)
CONCURRENCY = ConcurrencySpec(runs=1000, rounds=3, warmup=5)
AGUI = AguiSpec(clients=50, runs=500, warmup=10)
SCALEOUT = ScaleoutSpec(runs=60, clients=20, warmup=4)
QUICK_SCALEOUT = ScaleoutSpec(runs=6, clients=3, warmup=1)
QUICK = {
    "conversation": {"turns": 6, "repeats": 1, "window": 3},
    "long": {"turns": 10, "repeats": 1, "window": 3},
    "concurrency": {"runs": 20, "rounds": 1, "warmup": 1, "parallel": True},
    "agui": {"clients": 5, "runs": 20, "warmup": 2},
}


def _config(args: argparse.Namespace, workdir: Path) -> Config:
    def scaled(key: str, spec: Any, **changes: Any) -> Any:
        changes = {k: v for k, v in changes.items() if v is not None}
        return replace(spec, **(QUICK[key] if args.quick else {}), **changes)

    conversation = scaled("conversation", CONVERSATION, contenders=args.conversation_contenders)
    long = scaled("long", LONG_CONVERSATION, contenders=args.long_contenders)
    if args.turns is not None:
        conversation = conversation.with_turns(args.turns)
    if args.long_turns is not None:
        long = long.with_turns(args.long_turns)
    skip = args.skip
    return Config(
        quick=args.quick,
        iterations=args.iterations if args.iterations is not None else 2 if args.quick else 150,
        warmup=1 if args.quick else 10,
        workdir=workdir,
        conversations=tuple(
            spec for key, spec in (("conversation", conversation), ("long", long)) if key not in skip
        ),
        concurrency=None
        if "concurrency" in skip
        else scaled(
            "concurrency",
            CONCURRENCY,
            runs=args.concurrent_runs,
            contenders=args.concurrency_contenders,
            profile="profile" not in skip,
        ),
        agui=None if "agui" in skip else scaled("agui", AGUI, runs=args.agui_runs),
        profile_runs=0 if "profile" in skip else 2 if args.quick else 30,
        progress=_progress,
    )


async def _run(cfg: Config, skip: frozenset[str]) -> Results:
    start = time.perf_counter()
    results = Results(config=cfg, machine=machine_info())
    steps: list[tuple[str, Callable[[], Awaitable[None]]]] = []

    async def timing_step() -> None:
        results.timing = await timing(cfg)

    async def writes_step() -> None:
        results.writes = await checkpoint_writes(cfg)

    async def context_step() -> None:
        results.context = await context_growth(cfg)

    def conversation_step(spec: ConversationSpec) -> Callable[[], Awaitable[None]]:
        async def step() -> None:
            results.conversations.append(await conversation(cfg, spec))

        return step

    async def profile_step() -> None:
        results.profile = await profile_ours(max(cfg.delegations), "sqlite", cfg.profile_runs, cfg.workdir)

    async def concurrency_step() -> None:
        assert cfg.concurrency is not None
        results.concurrency = await concurrency(cfg, cfg.concurrency)

    async def agui_step() -> None:
        assert cfg.agui is not None
        results.agui = await agui_endpoint(cfg, cfg.agui)

    if "timing" not in skip:
        steps.append((f"per-run wall time ({cfg.iterations} runs per contender per cell)", timing_step))
    if "writes" not in skip:
        steps.append(("checkpoint writes and bytes", writes_step))
    if "context" not in skip:
        steps.append(("supervisor context growth", context_step))
    if "peers" not in skip and not cfg.quick:

        # As many runs as the per-run table: these tables judge issue 41's bounds, and at
        # half the runs one cell's ratio differed by 6% between two tables of one run.
        async def peers_step() -> None:
            runs = cfg.iterations
            results.peers = await peer_timing(cfg.kinds, cfg.delegations, runs, cfg.warmup, cfg.workdir)
            # After the Python peers, not beside them: its own Node process would share the cores.
            results.mastra = await mastra_timing(cfg.kinds, cfg.delegations, runs, cfg.warmup, cfg.workdir)

        steps.append((f"peers: every framework a user might pick instead ({cfg.iterations} runs per cell)", peers_step))
    if "one_path" not in skip:
        one_runs = 3 if cfg.quick else cfg.iterations

        async def one_path_step() -> None:
            results.one_path = await measure_one_path(cfg.kinds, cfg.delegations, one_runs, cfg.warmup, cfg.workdir)

        steps.append((f"one execution path: facade and compiled graph, workers with tools ({one_runs} runs per cell)", one_path_step))
    if "guard" not in skip:
        guard_runs = 40 if cfg.quick else 100

        async def guard_step() -> None:
            results.guard = await measure_guard(guard_runs, 5, cfg.workdir, progress=_progress)

        steps.append(
            (
                f"regression guard: facade and compiled graph against the floor, create_agent and each other ({guard_runs} "
                "runs), a 150-turn conversation; a tripped ratio measured again",
                guard_step,
            )
        )
    if "working_memory" not in skip:

        async def working_memory_step() -> None:
            for kind in cfg.kinds:
                results.working_memory.append(await working_memory_cost(kind, cfg.iterations, cfg.warmup, cfg.workdir))

        steps.append((f"working memory cost ({cfg.iterations} runs per variant per checkpointer)", working_memory_step))
    for spec in cfg.conversations:
        steps.append(
            (f"{spec.turns}-turn conversation on sqlite (x{spec.repeats}, {', '.join(spec.contenders)})", conversation_step(spec))
        )
    if cfg.profile_runs:
        steps.append((f"profile of ours (N={max(cfg.delegations)}, sqlite, {cfg.profile_runs} runs)", profile_step))
    if cfg.concurrency is not None:
        c = cfg.concurrency
        steps.append(
            (
                f"{c.runs} concurrent runs, {c.latency * 1000:.0f} ms model latency "
                f"({c.rounds} process(es) per contender{', then one profiled' if c.profile else ''})",
                concurrency_step,
            )
        )
    if cfg.agui is not None:
        steps.append((f"AG-UI endpoint ({cfg.agui.clients} clients, {cfg.agui.runs} runs)", agui_step))
    if "scaleout" not in skip:
        spec = QUICK_SCALEOUT if cfg.quick else SCALEOUT

        async def scaleout_step() -> None:
            results.scaleout = await scaleout(spec, cfg.workdir)

        steps.append((f"scale-out on Aegra: 1 server, then 2 ({spec.runs} runs, {spec.clients} clients)", scaleout_step))
    for i, (title, step) in enumerate(steps, 1):
        _progress(f"[{i}/{len(steps)}] {title}")
        began = time.perf_counter()
        await step()
        _progress(f"  ({time.perf_counter() - began:.1f} s)")
    results.elapsed = time.perf_counter() - start
    return results


def main(argv: list[str] | None = None) -> int:
    args_in = sys.argv[1:] if argv is None else argv
    if args_in[:1] == ["soak"]:  # `python -m bench soak ...`: the served soak (bench/soak.py), options of its own
        from bench.soak import main as soak

        return soak(args_in[1:])
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description="Benchmark supervisor-graph against langgraph-supervisor and a hand-written LangGraph graph.",
    )
    parser.add_argument("--quick", action="store_true", help="tiny iteration counts (CI smoke); numbers mean nothing")
    parser.add_argument(
        "--out",
        type=Path,
        help="markdown file to write (default bench/RESULTS.md, or bench/RESULTS.quick.md with --quick)",
    )
    parser.add_argument("--iterations", type=int, help="timed runs per contender per cell")
    parser.add_argument("--turns", type=int, help=f"turns of the {CONVERSATION.turns}-turn conversation")
    parser.add_argument("--long-turns", type=int, help=f"turns of the {LONG_CONVERSATION.turns}-turn conversation")
    parser.add_argument("--concurrent-runs", type=int, help="runs started at once in the concurrency scenario")
    parser.add_argument("--agui-runs", type=int, help="AG-UI runs over all clients")
    for flag, default, what in (
        ("--conversation-contenders", CONVERSATION.contenders, f"the {CONVERSATION.turns}-turn conversation"),
        ("--long-contenders", LONG_CONVERSATION.contenders, f"the {LONG_CONVERSATION.turns}-turn conversation"),
        ("--concurrency-contenders", CONCURRENCY.contenders, "the concurrency scenario"),
    ):
        parser.add_argument(
            flag, type=_contenders, default=default, help=f"comma-separated contenders of {what} (default {','.join(default)})"
        )
    parser.add_argument(
        "--skip",
        default="",
        help=f"comma-separated scenarios to leave out: {', '.join(SCENARIOS)}",
    )
    parser.add_argument("--no-profile", action="store_true", help="skip the cProfile sections (= --skip profile)")
    parser.add_argument("--no-chart", action="store_true", help="do not write the PNG chart")
    parser.add_argument("--write-guard", action="store_true", help="measure the guard ratios (200 runs) and rewrite bench/guard.json")
    args = parser.parse_args(argv)
    if args.write_guard:
        with tempfile.TemporaryDirectory(prefix="supervisor-graph-guard-") as tmp:
            written = asyncio.run(write_guard(200, 10, Path(tmp)))
        for name, value in written.items():
            _progress(f"{name}: {value:.3f}")
        return 0
    args.skip = frozenset(x.strip() for x in args.skip.split(",") if x.strip()) | (
        {"profile"} if args.no_profile else set()
    )
    if args.skip - set(SCENARIOS):
        parser.error(f"--skip: choose among {', '.join(SCENARIOS)}")

    out: Path = args.out or BENCH_DIR / ("RESULTS.quick.md" if args.quick else "RESULTS.md")
    chart = out.parent / ("results.quick.png" if args.quick else "results.png")
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    # deepagents' subagent tool has a compiled graph as a pydantic default: one warning per schema
    warnings.filterwarnings("ignore", message="Default value <langgraph.graph.state.CompiledStateGraph")
    with tempfile.TemporaryDirectory(prefix="supervisor-graph-bench-") as tmp:
        cfg = _config(args, Path(tmp))
        results = asyncio.run(_run(cfg, args.skip))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(results), encoding="utf-8")
    _progress(f"wrote {out}")
    if not args.no_chart and write_chart(results, chart):
        _progress(f"wrote {chart}")
    _progress(f"done in {results.elapsed:.1f} s")
    if results.scaleout is not None and not results.scaleout.available:
        _progress(f"scale-out on Aegra skipped: {results.scaleout.reason}")
    for line in guard_summary(results.guard):
        _progress(line)
    return 0 if all(check.ok for check in results.guard) else 1


if __name__ == "__main__":
    sys.exit(main())
