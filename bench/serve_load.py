"""`supervisor-graph serve --workers W` under many concurrent AG-UI clients: the served
product across cores (SPEC §18), and with a worker SIGKILLed mid-load (SPEC §19, the
figures of docs/guarantees.md).

    python -m bench.serve_load [--storage sqlite|postgres] [--clients 100] [--seconds 60] [--no-kill]
    python -m bench.serve_load --sweep | --workers 1,2,4 [--client-procs P] [--warmup 3] [--kill]

The server is the real command in a subprocess (`agent` below: a supervisor making two
parallel delegations and a tool call per turn, each subagent calling a tool; scripted
models with a small latency). Each client keeps a conversation of its own going: a new
thread, then further turns on it. The clients run in `--client-procs` processes of their
own (`bench/load_clients.py`), each reporting its CPU use: one near a full core may be
what caps the figures, and is flagged. Counted per W: runs finished per second, p50 / p99
latency (first request to RUN_FINISHED), HTTP errors, RUN_ERROR events (a run refused
because a killed worker's lease still held its thread is counted apart: the client
retries it), workers uvicorn replaced. Without `--workers`/`--sweep`: W = 2 and one
uvicorn worker is killed with SIGKILL halfway (uvicorn starts a new one). After each W,
one more message goes to every thread, and every stored history is checked: each tool
call answered exactly once, no result without its call, the message of every run that
finished stored once and answered.

Postgres: a fresh database beside `--postgres` (default 127.0.0.1, trust auth), dropped
afterwards.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from pydantic import BaseModel

from bench.load_clients import (
    ClientPlan,
    ClientReport,
    cpu_seconds,
    limits,
    machine_ticks,
    post_run,
    run_clients,
    workers_of,
)
from bench.stats import quantile
from supervisor_graph import Agent, Memory, create_tool
from supervisor_graph.testing import ScriptedChatModel, delegate, tool_call

__all__ = ["LoadResult", "agent", "lost", "main", "problems", "run_load", "sweep"]

ROOT = Path(__file__).resolve().parents[1]
STORAGE_ENV = "SG_LOAD_STORAGE"
PATH = "/agent"
RESOURCE = "load"
PG_ADMIN = os.environ.get("SUPERVISOR_GRAPH_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")
CLIENT_CPU_LIMIT = 80.0  # % of a core: a client process above it may be what caps the figures


class _Text(BaseModel):
    text: str


async def _lookup(args: _Text) -> str:
    await asyncio.sleep(0.005)
    return f"found {args.text}"


def _boss(messages: list[BaseMessage]) -> Any:
    if isinstance(messages[-1], HumanMessage):
        return [delegate("research", "dig"), delegate("writer", "write"), tool_call("lookup", {"text": "top"})]
    return "done"


def _sub(messages: list[BaseMessage]) -> Any:
    return "answer" if isinstance(messages[-1], ToolMessage) else tool_call("lookup", {"text": "sub"})


def _agent() -> Agent:
    lookup = create_tool(id="lookup", description="Look up.", input_schema=_Text, execute=_lookup)
    subs = {
        name: Agent(
            id=f"{name}-agent", description=f"The {name}.", tools=[lookup],
            model=ScriptedChatModel(policy=_sub, latency=0.01, record_calls=False),
        )
        for name in ("research", "writer")
    }
    storage = os.environ.get(STORAGE_ENV, ":memory:")
    return Agent(
        id="boss", tools=[lookup], agents=subs, memory=Memory(storage, lease_ttl=2.0),
        model=ScriptedChatModel(policy=_boss, latency=0.01, record_calls=False),
    )


agent = _agent()


def problems(messages: list[BaseMessage]) -> list[str]:
    """What is out of step in a transcript: results without calls, calls not answered once."""
    calls: set[str] = set()
    results: Counter[str] = Counter()
    found = []
    for m in messages:
        if isinstance(m, AIMessage):
            calls.update(c["id"] or "" for c in m.tool_calls)
        elif isinstance(m, ToolMessage):
            if m.tool_call_id not in calls:
                found.append(f"result without call {m.tool_call_id}")
            results[m.tool_call_id] += 1
    found.extend(f"call {c} answered {results[c]} times" for c in calls if results[c] != 1)
    return found


def lost(messages: list[BaseMessage], sent: list[str]) -> list[str]:
    """The messages of finished runs that the stored history does not hold exactly once,
    each followed by an answer of the agent."""
    found = []
    for text in sent:
        at = [i for i, m in enumerate(messages) if isinstance(m, HumanMessage) and m.content == text]
        if len(at) != 1:
            found.append(f"{text!r} stored {len(at)} times")
        elif not any(isinstance(m, AIMessage) and not m.tool_calls for m in messages[at[0] + 1 :]):
            found.append(f"{text!r} has no answer after it")
    return found


@dataclass
class LoadResult:
    storage: str
    clients: int
    seconds: float
    workers: int = 2
    client_procs: int = 1
    runs: int = 0
    window_s: float = 0.0  # the counted window as the clients saw it (runs in flight at the end included)
    latencies: list[float] = field(default_factory=list)
    http_errors: Counter[str] = field(default_factory=Counter)
    run_errors: Counter[str] = field(default_factory=Counter)
    busy_retried: int = 0  # runs refused while the killed worker's lease held the thread
    killed_worker: int | None = None
    worker_restarts: int = 0  # workers uvicorn found dead or hung (its 5 s health check) and replaced, the killed one aside
    server_notes: list[str] = field(default_factory=list)  # the server log's lines about dead workers and errors
    client_cpu: list[float] = field(default_factory=list)  # % of one core, per client process
    worker_cpu: list[float] = field(default_factory=list)  # % of one core, per server worker, over the counted window
    machine_busy: float = 0.0  # % of all the machine's cores busy over the window (other users' work included)
    threads: int = 0
    threads_out_of_step: dict[str, list[str]] = field(default_factory=dict)
    threads_losing: dict[str, list[str]] = field(default_factory=dict)  # a finished run's message missing or twice
    final_runs: int = 0  # one more message on every thread the clients started
    final_runs_ok: int = 0
    final_errors: Counter[str] = field(default_factory=Counter)  # what the failed ones got

    @property
    def runs_per_second(self) -> float:
        return self.runs / self.window_s if self.window_s else 0.0

    @property
    def errors(self) -> int:
        return sum(self.http_errors.values()) + sum(self.run_errors.values())

    @property
    def client_bound(self) -> bool:
        """A client process used most of a core: the generator may have capped the figure."""
        return any(cpu >= CLIENT_CPU_LIMIT for cpu in self.client_cpu)

    @property
    def failed(self) -> bool:
        killed = self.killed_worker is not None
        return bool(
            self.threads_out_of_step or self.threads_losing or self.run_errors or self.final_runs_ok < self.final_runs
            or (self.http_errors and not killed)
        )

    def summary(self) -> dict[str, Any]:
        return {
            "storage": self.storage, "workers": self.workers, "clients": self.clients, "client_procs": self.client_procs,
            "seconds": self.seconds, "runs": self.runs, "runs_per_second": round(self.runs_per_second, 1),
            "p50_ms": round(quantile(self.latencies, 0.5) * 1000, 1), "p99_ms": round(quantile(self.latencies, 0.99) * 1000, 1),
            "http_errors": dict(self.http_errors), "run_errors": dict(self.run_errors), "busy_retried": self.busy_retried,
            "killed_worker": self.killed_worker, "worker_restarts": self.worker_restarts, "client_cpu_percent": [round(c) for c in self.client_cpu],
            "client_bound": self.client_bound,
            "worker_cpu_percent": [round(c) for c in self.worker_cpu], "machine_busy_percent": round(self.machine_busy), "threads": self.threads, "threads_out_of_step": len(self.threads_out_of_step),
            "threads_losing_messages": len(self.threads_losing), "final_runs": self.final_runs,
            "final_runs_ok": self.final_runs_ok, "final_errors": dict(self.final_errors),
        }


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def _postgres(admin: str) -> Any:
    """A fresh database next to `admin` (a URL of an existing database), dropped afterwards."""
    import psycopg

    name = f"sg_load_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    try:
        yield admin.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def _drive(url: str, result: LoadResult, server: subprocess.Popen[bytes], kill: bool, warmup: float) -> dict[str, list[str]]:
    """The load: `client_procs` processes share the clients; halfway, maybe a worker is killed.
    Returns thread -> the texts of its finished runs."""
    ctx = multiprocessing.get_context("spawn")  # fresh interpreters: no copy of this one's loops or threads
    out = ctx.Queue()
    go = ctx.Event()
    shares = [result.clients // result.client_procs + (i < result.clients % result.client_procs) for i in range(result.client_procs)]
    procs, readies = [], []
    for i, share in enumerate(shares):
        plan = ClientPlan(url, share, result.seconds, warmup, f"load-{i}")
        ready = ctx.Event()
        procs.append(ctx.Process(target=run_clients, args=(plan, ready, go, out), daemon=True))
        readies.append(ready)
        procs[-1].start()
    for ready in readies:
        if not ready.wait(60):
            raise RuntimeError("a client process did not start within 60 s")
    go.set()
    time.sleep(warmup)
    workers = workers_of(server)
    before = {pid: cpu_seconds(pid) for pid in workers}, machine_ticks(), time.monotonic()
    if kill:
        time.sleep(result.seconds / 2)
        if workers != [server.pid]:  # W = 1: uvicorn serves in its own process, no supervisor to restart it
            result.killed_worker = workers[0]
            os.kill(workers[0], signal.SIGKILL)
    time.sleep(max(0.0, before[2] + result.seconds - time.monotonic()))
    elapsed, (busy0, total0), (busy1, total1) = time.monotonic() - before[2], before[1], machine_ticks()
    result.worker_cpu = [100 * (cpu_seconds(pid) - cpu) / elapsed for pid, cpu in before[0].items() if pid != result.killed_worker]
    result.machine_busy = 100 * (busy1 - busy0) / max(1, total1 - total0)
    total = ClientReport()
    reports = [out.get(timeout=warmup + result.seconds + 300) for _ in procs]
    for proc in procs:
        proc.join(30)
    for report in reports:
        total.add(report)
        result.client_cpu.append(report.cpu_percent)
    result.runs, result.latencies, result.busy_retried = total.runs, total.latencies, total.busy_retried
    result.http_errors, result.run_errors = total.http_errors, total.run_errors
    result.window_s = max(r.wall_s for r in reports)
    return {thread: total.sent.get(thread, []) for thread in total.threads}


async def _finals(url: str, sent: dict[str, list[str]], result: LoadResult) -> None:
    """One more message on every thread (at most `clients` at a time): each must still answer."""
    import httpx

    report = ClientReport()
    gate = asyncio.Semaphore(result.clients)
    async with httpx.AsyncClient(timeout=120, limits=limits(result.clients)) as client:

        async def final(thread: str) -> bool:
            async with gate:
                return await post_run(client, url, thread, "after the load", report)

        finals = await asyncio.gather(*(final(t) for t in sorted(sent)))
    result.final_runs, result.final_runs_ok = len(finals), sum(finals)
    result.final_errors = report.http_errors + report.run_errors
    for thread, texts in report.sent.items():
        sent[thread].extend(texts)


async def _check(storage: str, sent: dict[str, list[str]], result: LoadResult) -> None:
    async with Memory(storage) as memory:
        for thread in sorted(sent):
            messages = await memory.get_messages(thread)
            if not messages:
                if sent[thread]:
                    result.threads_losing[thread] = ["finished runs, nothing stored"]
                continue
            result.threads += 1
            found = problems(messages)
            if found:
                result.threads_out_of_step[thread] = found[:3]
            missing = lost(messages, sent[thread])
            if missing:
                result.threads_losing[thread] = missing[:3]


def run_load(
    storage_kind: str, clients: int, seconds: float, kill: bool = True, workers: int = 2, client_procs: int = 1,
    warmup: float = 0.0, postgres: str = PG_ADMIN,
) -> LoadResult:
    """`supervisor-graph serve --workers W` under `clients` AG-UI clients in `client_procs`
    processes for `seconds` (after `warmup` seconds not counted), then the final message on
    every thread and the history check."""
    result = LoadResult(storage=storage_kind, clients=clients, seconds=seconds, workers=workers, client_procs=client_procs)
    with ExitStack() as stack:
        if storage_kind == "postgres":
            storage = stack.enter_context(_postgres(postgres))
        else:
            storage = f"file:{stack.enter_context(tempfile.TemporaryDirectory())}/load.db"
        port = _free_port()
        env = {**os.environ, STORAGE_ENV: storage, "PYTHONPATH": str(ROOT)}
        log = stack.enter_context(tempfile.TemporaryFile())
        server = subprocess.Popen(
            [str(Path(sys.executable).with_name("supervisor-graph")), "serve", "bench.serve_load:agent", "--workers",
             str(workers), "--port", str(port), "--resource", RESOURCE],
            env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, cwd=ROOT,
        )  # fmt: skip
        stack.callback(lambda: os.killpg(server.pid, signal.SIGKILL) if server.poll() is None else None)
        url = f"http://127.0.0.1:{port}{PATH}"
        _wait_up(port, server, log, workers)
        sent = _drive(url, result, server, kill, warmup)
        asyncio.run(_finals(url, sent, result))
        asyncio.run(_check(storage, sent, result))
        log.seek(0)
        lines = log.read().decode(errors="replace").splitlines()
        result.worker_restarts = sum("] died" in line for line in lines) - (result.killed_worker is not None)
        result.server_notes = [line for line in lines if "died" in line or "Error" in line or "Traceback" in line][:10]
    return result


def _wait_up(port: int, server: subprocess.Popen[bytes], log: Any, workers: int) -> None:
    """Until the port answers and every worker has said its application started."""
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        log.seek(0)
        text = log.read().decode(errors="replace")
        if server.poll() is not None:
            raise RuntimeError(f"serve exited: {text[-2000:]}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0 and text.count("Application startup complete") >= workers:
                return
        time.sleep(0.2)
    raise RuntimeError("serve did not start within 90 s")


def sweep(cores: int) -> list[int]:
    """1, 2, 4, ... up to `cores`, and `cores` itself."""
    out = [1]
    while out[-1] * 2 <= cores:
        out.append(out[-1] * 2)
    return out if out[-1] == cores else [*out, cores]


def _workers(value: str) -> list[int]:
    try:
        out = [int(v) for v in value.split(",") if v.strip()]
    except ValueError:
        out = []
    if not out or min(out) < 1:
        raise argparse.ArgumentTypeError("W or W1,W2,...: worker counts of 1 or more")
    return out


def table(results: list[LoadResult]) -> list[str]:
    """The curve, one row per storage and W."""
    rows = [
        "| storage | W | runs/s | p50 ms | p99 ms | runs | errors | worker restarts | threads checked | out of step "
        "| lost messages | workers' CPU % each | machine busy % | client procs (CPU % each) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---|",
    ]
    for r in results:
        cpu = ", ".join(f"{c:.0f}" for c in r.client_cpu)
        rows.append(
            f"| {r.storage} | {r.workers} | {r.runs_per_second:.1f} | {quantile(r.latencies, 0.5) * 1000:.0f} | "
            f"{quantile(r.latencies, 0.99) * 1000:.0f} | {r.runs} | {r.errors} | {r.worker_restarts} | {r.threads} | {len(r.threads_out_of_step)} | "
            f"{len(r.threads_losing)} | {', '.join(f'{c:.0f}' for c in r.worker_cpu)} | {r.machine_busy:.0f} | {r.client_procs} ({cpu}){' CLIENT-BOUND' if r.client_bound else ''} |"
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.serve_load", description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--storage", choices=("sqlite", "postgres"), action="append")
    parser.add_argument("--workers", type=_workers, help="W or a list W1,W2,... of worker processes (default 2)")
    parser.add_argument("--sweep", action="store_true", help="W = 1, 2, 4, ... up to this machine's cores")
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--client-procs", type=int, help="processes the clients are spread over (default: cores/3, at least 1)")
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--warmup", type=float, help="seconds of load not counted at the start (default: 0, or 3 with W)")
    parser.add_argument("--kill", action=argparse.BooleanOptionalAction, default=None,
                        help="SIGKILL a worker halfway (default: yes without --workers/--sweep, no with them)")  # fmt: skip
    parser.add_argument("--postgres", default=PG_ADMIN, help=f"an existing database to create the test one beside (default {PG_ADMIN})")
    args = parser.parse_args(argv)
    cores = os.cpu_count() or 1
    curve = args.sweep or args.workers is not None
    counts = sorted({*(args.workers or []), *(sweep(cores) if args.sweep else [])}) or [2]
    kill = not curve if args.kill is None else args.kill
    procs = args.client_procs or max(1, round(cores / 3))
    warmup = args.warmup if args.warmup is not None else 3.0 if curve else 0.0
    print(f"{cores} cores; W = {', '.join(map(str, counts))}; {args.clients} clients in {procs} client process(es)"
          f"{'; a worker SIGKILLed halfway' if kill else ''}", flush=True)  # fmt: skip
    results = []
    for kind in args.storage or ["sqlite", "postgres"]:
        for workers in counts:
            result = run_load(kind, args.clients, args.seconds, kill, workers, procs, warmup, args.postgres)
            results.append(result)
            print(json.dumps(result.summary()), flush=True)
            if result.client_bound:
                print(f"WARNING: a client process used {max(result.client_cpu):.0f}% of a core: the load generator may be "
                      "the bottleneck; give it more --client-procs", flush=True)  # fmt: skip
            if result.worker_restarts:
                print(f"WARNING: uvicorn replaced {result.worker_restarts} worker(s) it found dead or not answering its "
                      "5 s health check; the server log says: " + " / ".join(result.server_notes), flush=True)  # fmt: skip
            for found in (result.threads_out_of_step, result.threads_losing):
                if found:
                    print(json.dumps(found)[:2000], flush=True)
    print("\n".join(table(results)), flush=True)
    return 1 if any(r.failed for r in results) else 0


if __name__ == "__main__":
    raise SystemExit(main())
