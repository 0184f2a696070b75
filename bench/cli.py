"""Command line: `python -m bench [--quick] [--out PATH] ...`."""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
import warnings
from pathlib import Path

from bench.contenders import CONTENDERS
from bench.profiling import profile_ours
from bench.report import Results, machine_info, render, write_chart
from bench.scenarios import Config, checkpoint_writes, context_growth, conversation, timing

__all__ = ["main"]

BENCH_DIR = Path(__file__).resolve().parent


def _progress(message: str) -> None:
    print(message, flush=True)


def _config(args: argparse.Namespace, workdir: Path) -> Config:
    if args.quick:
        cfg = Config(
            quick=True, iterations=2, warmup=1, workdir=workdir, turns=6, turn_repeats=1, window=3, profile_runs=2
        )
    else:
        cfg = Config(
            quick=False, iterations=150, warmup=10, workdir=workdir, turns=40, turn_repeats=8, window=5, profile_runs=30
        )
    if args.iterations is not None:
        cfg.iterations = args.iterations
    if args.turns is not None:
        cfg.turns = args.turns
        cfg.window = min(cfg.window, max(1, args.turns // 2))
    names = tuple(n.strip() for n in args.conversation_contenders.split(",") if n.strip())
    unknown = set(names) - set(CONTENDERS)
    if unknown or not names:
        raise SystemExit(f"--conversation-contenders: choose among {', '.join(CONTENDERS)}")
    cfg.conversation_contenders = names
    if args.no_profile:
        cfg.profile_runs = 0
    cfg.progress = _progress
    return cfg


async def _run(cfg: Config) -> Results:
    start = time.perf_counter()
    results = Results(config=cfg, machine=machine_info())
    steps = 5 if cfg.profile_runs else 4
    _progress(f"[1/{steps}] per-run wall time ({cfg.iterations} runs per contender per cell)")
    results.timing = await timing(cfg)
    _progress(f"[2/{steps}] checkpoint writes and bytes")
    results.writes = await checkpoint_writes(cfg)
    _progress(f"[3/{steps}] supervisor context growth")
    results.context = await context_growth(cfg)
    _progress(f"[4/{steps}] {cfg.turns}-turn conversation on sqlite (x{cfg.turn_repeats})")
    results.conversation = await conversation(cfg)
    if cfg.profile_runs:
        n = max(cfg.delegations)
        _progress(f"[5/{steps}] profile of ours (N={n}, sqlite, {cfg.profile_runs} runs)")
        results.profile = await profile_ours(n, "sqlite", cfg.profile_runs, cfg.workdir)
    results.elapsed = time.perf_counter() - start
    return results


def main(argv: list[str] | None = None) -> int:
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
    parser.add_argument("--turns", type=int, help="turns of the long conversation")
    parser.add_argument(
        "--conversation-contenders",
        default=",".join(CONTENDERS),
        help="comma-separated contenders of the long conversation (the incumbent's storage grows quadratically)",
    )
    parser.add_argument("--no-profile", action="store_true", help="skip the cProfile section")
    parser.add_argument("--no-chart", action="store_true", help="do not write the PNG chart")
    args = parser.parse_args(argv)

    out: Path = args.out or BENCH_DIR / ("RESULTS.quick.md" if args.quick else "RESULTS.md")
    chart = out.parent / ("results.quick.png" if args.quick else "results.png")
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    with tempfile.TemporaryDirectory(prefix="supervisor-graph-bench-") as tmp:
        cfg = _config(args, Path(tmp))
        results = asyncio.run(_run(cfg))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(results), encoding="utf-8")
    _progress(f"wrote {out}")
    if not args.no_chart and write_chart(results, chart):
        _progress(f"wrote {chart}")
    _progress(f"done in {results.elapsed:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
