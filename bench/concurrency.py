"""Many concurrent runs with a simulated model latency, one contender per process (SPEC §18).

`python -m bench.concurrency CONTENDER [--runs 1000] [--latency 0.05] [--delegations 1]
[--profile]` builds the contender on an in-memory checkpointer, makes a few warm-up runs,
then starts `runs` runs at once with `asyncio.gather` (each on its own thread id) and
prints one JSON object on stdout: total wall time, process CPU time, per-run latencies,
and the process's resident memory (baseline after the warm-up, peak, after the runs).
Each contender runs in a fresh process so that peak memory is its own.

`concurrency()` is the benchmark's side: it starts one such process per contender and
round, contenders interleaved.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import json
import resource
import sys
import time
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.contenders import CONTENDERS, Script, build
from bench.profiling import Profile, profile_from_dict, summarize
from bench.savers import Storage
from bench.scenarios import TASK, BenchError, Config, run_checked
from bench.stats import median, quantile

__all__ = ["ConcurrencyResult", "ConcurrencySpec", "concurrency", "run_child"]

ROOT = Path(__file__).resolve().parents[1]
MB = 1024 * 1024


@dataclass(frozen=True)
class ConcurrencySpec:
    runs: int = 1000  # concurrent runs per contender
    latency: float = 0.05  # seconds per model call, every contender
    delegations: int = 1
    rounds: int = 3  # processes per contender (interleaved); medians are reported
    warmup: int = 5  # sequential runs before the concurrent ones
    contenders: tuple[str, ...] = CONTENDERS
    profile: bool = True  # one more process for ours, under cProfile
    parallel: bool = False  # start all processes at once (--quick: faster, the figures mean nothing)

    @property
    def model_calls(self) -> int:
        """Sequential model calls per run: n+1 supervisor calls and n worker calls."""
        return 2 * self.delegations + 1

    @property
    def ideal(self) -> float:
        """Wall time of the batch if only the model latency counted (steps x latency)."""
        return self.model_calls * self.latency


@dataclass
class ConcurrencyResult:
    """One process's measurements (the JSON `python -m bench.concurrency` prints)."""

    name: str
    runs: int
    latency: float
    delegations: int
    wall: float  # seconds from the gather to its end
    cpu: float  # process CPU seconds over the same span (every thread)
    durations: list[float]  # per run: seconds from its start to its end
    finished_at: list[float]  # per run: seconds from the batch start to its end
    started_at: list[float]  # per run: seconds from the batch start to its first step
    rss_baseline: int  # bytes, after imports, build and warm-up, before the batch
    rss_peak: int  # bytes, the process's peak (VmHWM)
    rss_after: int  # bytes, after the batch, everything it stored still held
    gc_seconds: float = 0.0  # time the cyclic garbage collector ran during the batch
    gc_collections: list[int] = field(default_factory=list)  # collections per generation during the batch
    profile: dict[str, Any] | None = None

    @property
    def peak_per_run(self) -> float:
        return (self.rss_peak - self.rss_baseline) / self.runs

    @property
    def retained_per_run(self) -> float:
        return (self.rss_after - self.rss_baseline) / self.runs

    def p(self, q: float) -> float:
        return quantile(self.durations, q)

    def profile_obj(self) -> Profile | None:
        return profile_from_dict(self.profile) if self.profile else None


def _rss() -> int:
    import psutil

    return int(psutil.Process().memory_info().rss)


class _GcTimer:
    """Time spent in the cyclic garbage collector while installed (`gc.callbacks`)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.collections = [0, 0, 0]
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.seconds += time.perf_counter() - self._started
            self.collections[info["generation"]] += 1

    def __enter__(self) -> _GcTimer:
        gc.callbacks.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self)


def _peak_rss() -> int:
    """This process's peak resident memory in bytes.

    On Linux, `VmHWM` from /proc (its address space's high-water mark). Not `ru_maxrss`:
    Linux carries that over `execve`, so a child would report its parent's peak when the
    parent was bigger.
    """
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak) * (1 if sys.platform == "darwin" else 1024)  # bytes on macOS, KiB elsewhere


async def run_child(name: str, spec: ConcurrencySpec, *, profile: bool = False) -> ConcurrencyResult:
    """Measure `spec.runs` concurrent runs of contender `name` in this process."""
    script = Script(latency=spec.latency, record_calls=False)
    contender = await build(name, spec.delegations, Storage("memory"), script)
    profiler = cProfile.Profile() if profile else None
    try:
        for i in range(spec.warmup):
            await run_checked(contender, TASK, f"warmup-{i}")
        calls0 = contender.call_counts()
        gc.collect()
        baseline = _rss()
        start = time.perf_counter()

        async def one(i: int) -> tuple[float, float, str]:
            began = time.perf_counter()
            text = await contender.run(TASK, f"run-{i}")
            return began, time.perf_counter(), text

        with _GcTimer() as gc_timer:
            if profiler is not None:
                profiler.enable()
            cpu0 = time.process_time()
            outcomes = await asyncio.gather(*(one(i) for i in range(spec.runs)))
            cpu = time.process_time() - cpu0
            wall = time.perf_counter() - start
            if profiler is not None:
                profiler.disable()
        after = _rss()
        calls1 = contender.call_counts()
    finally:
        await contender.aclose()
    n, runs = spec.delegations, spec.runs
    wrong = sum(text != script.final_answer for _, _, text in outcomes)
    sup, work = calls1[0] - calls0[0], calls1[1] - calls0[1]
    if wrong or sup != runs * (n + 1) or work != runs * n:
        raise BenchError(
            f"{name}: {wrong} of {runs} runs gave a wrong answer; {sup} supervisor and {work} worker model "
            f"calls, expected {runs * (n + 1)} and {runs * n}"
        )
    return ConcurrencyResult(
        name=name,
        runs=runs,
        latency=spec.latency,
        delegations=n,
        wall=wall,
        cpu=cpu,
        durations=[end - began for began, end, _ in outcomes],
        finished_at=[end - start for _, end, _ in outcomes],
        started_at=[began - start for began, _, _ in outcomes],
        rss_baseline=baseline,
        rss_peak=_peak_rss(),
        rss_after=after,
        gc_seconds=gc_timer.seconds,
        gc_collections=gc_timer.collections,
        profile=None if profiler is None else asdict(summarize(profiler, n=n, kind=_profile_kind(spec), runs=runs, wall=wall)),
    )


def _profile_kind(spec: ConcurrencySpec) -> str:
    return f"memory, {spec.runs} concurrent runs, {spec.latency * 1000:.0f} ms model latency"


# -- the benchmark's side -------------------------------------------------------------------


@dataclass
class ConcurrencyRun:
    spec: ConcurrencySpec
    results: dict[str, list[ConcurrencyResult]] = field(default_factory=dict)  # contender -> one per round
    profile: Profile | None = None

    def median_of(self, name: str, attr: str) -> float:
        return median([float(getattr(r, attr)) for r in self.results.get(name, [])])

    def latency(self, name: str, q: float) -> float:
        """Quantile `q` of the per-run latencies in each process, median over the processes."""
        return median([r.p(q) for r in self.results.get(name, [])])


async def _spawn(name: str, spec: ConcurrencySpec, *, profile: bool = False) -> ConcurrencyResult:
    args = [
        sys.executable,
        "-m",
        "bench.concurrency",
        name,
        f"--runs={spec.runs}",
        f"--latency={spec.latency}",
        f"--delegations={spec.delegations}",
        f"--warmup={spec.warmup}",
    ]
    if profile:
        args.append("--profile")
    proc = await asyncio.create_subprocess_exec(
        *args, cwd=ROOT, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await proc.communicate()
    if proc.returncode != 0:
        raise BenchError(f"`{' '.join(args[1:])}` failed ({proc.returncode}):\n{err.decode()[-3000:]}")
    data = json.loads(out.decode().strip().splitlines()[-1])
    return ConcurrencyResult(**data)


def _summary(r: ConcurrencyResult) -> str:
    return (
        f"{r.name} {r.wall:.2f} s wall, {r.cpu:.2f} s CPU, peak {r.rss_peak / MB:.0f} MB, "
        f"p99 {r.p(0.99) * 1000:.0f} ms"
    )


async def concurrency(cfg: Config, spec: ConcurrencySpec) -> ConcurrencyRun:
    """`spec.rounds` fresh processes per contender, interleaved (the first contender rotates)."""
    out = ConcurrencyRun(spec, {name: [] for name in spec.contenders})
    names = list(spec.contenders)
    jobs: list[tuple[str, bool, str]] = []  # (contender, profiled, progress label)
    for rnd in range(spec.rounds):
        k = rnd % len(names)
        jobs += [(name, False, f"round {rnd + 1}/{spec.rounds}") for name in names[k:] + names[:k]]
    if spec.profile and "ours" in names:
        jobs.append(("ours", True, "under cProfile"))

    async def job(name: str, profiled: bool, label: str) -> None:
        result = await _spawn(name, spec, profile=profiled)
        if profiled:
            out.profile = result.profile_obj()
        else:
            out.results[name].append(result)
        cfg.progress(f"  concurrency {label}: {_summary(result)}")

    if spec.parallel:
        await asyncio.gather(*(job(*j) for j in jobs))
    else:
        for j in jobs:
            await job(*j)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.concurrency", description=__doc__.split("\n\n")[0])
    parser.add_argument("contender", choices=CONTENDERS)
    defaults = ConcurrencySpec()
    parser.add_argument("--runs", type=int, default=defaults.runs)
    parser.add_argument("--latency", type=float, default=defaults.latency, help="seconds per model call")
    parser.add_argument("--delegations", type=int, default=defaults.delegations)
    parser.add_argument("--warmup", type=int, default=defaults.warmup)
    parser.add_argument("--profile", action="store_true", help="run under cProfile and add its summary")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    spec = ConcurrencySpec(runs=args.runs, latency=args.latency, delegations=args.delegations, warmup=args.warmup)
    result = asyncio.run(run_child(args.contender, spec, profile=args.profile))
    sys.stdout.write(json.dumps(asdict(result)) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
