"""The AG-UI endpoint under concurrent clients over loopback (SPEC §14, §18).

`python -m bench.agui [--latency 0] [--delegations 1]` is the server: ours (the same
agent as the `ours` contender, in-memory checkpointer) behind
`supervisor_graph.agui.add_agui_endpoint` in a FastAPI app on uvicorn, on a free
loopback port. Its first stdout line is JSON: `{"available": true, "port": ..., "path":
...}`, or `{"available": false, "reason": ...}` when the bridge (or FastAPI / uvicorn)
cannot be imported, and then it exits.

`agui_endpoint()` is the benchmark's side: it starts the server in a subprocess, makes a
few warm-up runs, then `clients` concurrent clients (one `httpx.AsyncClient`, streaming
POSTs of a `RunAgentInput`, each run on a new thread) take runs from a shared counter
until `runs` are done. Reported: runs per second, first-event latency (request sent to
the first SSE event), whole-run latency, and the server process's peak memory.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import socket
import sys
import time
import uuid
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.contenders import FINAL_ANSWER, Script, build
from bench.savers import Storage
from bench.scenarios import TASK, BenchError, Config

__all__ = ["AguiResult", "AguiSpec", "agui_endpoint"]

ROOT = Path(__file__).resolve().parents[1]
PATH = "/agent"
RESOURCE = "bench"
TERMINAL = ("RUN_FINISHED", "RUN_ERROR")


@dataclass(frozen=True)
class AguiSpec:
    clients: int = 50
    runs: int = 1000  # runs over all clients together
    warmup: int = 10  # sequential runs first
    latency: float = 0.0  # seconds per model call
    delegations: int = 1
    timeout: float = 120.0  # seconds per run


@dataclass
class AguiResult:
    spec: AguiSpec
    available: bool
    reason: str = ""  # why not available
    wall: float = 0.0  # seconds for the measured runs
    first_event: list[float] = field(default_factory=list)  # per run, seconds
    run_time: list[float] = field(default_factory=list)  # per run: request sent to terminal event
    events: list[int] = field(default_factory=list)  # SSE events per run
    errors: list[str] = field(default_factory=list)  # runs that did not finish with RUN_FINISHED
    server_rss_peak: int = 0  # bytes, sampled
    server_rss_start: int = 0  # bytes, after the warm-up runs
    server_cpu: float = 0.0  # CPU seconds the server process used for the measured runs

    @property
    def runs_per_second(self) -> float:
        return len(self.run_time) / self.wall if self.wall else float("nan")


# -- server ------------------------------------------------------------------------------


def serve(latency: float, delegations: int) -> int:
    try:
        import uvicorn
        from fastapi import FastAPI

        from supervisor_graph.agui import AGUIAgent, add_agui_endpoint
    except Exception as exc:  # noqa: BLE001 - any import failure means "not available"
        print(json.dumps({"available": False, "reason": f"{type(exc).__name__}: {exc}"}), flush=True)
        return 0
    contender = asyncio.run(build("ours", delegations, Storage("memory"), Script(latency=latency, record_calls=False)))
    app = FastAPI()
    add_agui_endpoint(app, AGUIAgent(contender.agent, resource_id=RESOURCE), path=PATH)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False))
    print(json.dumps({"available": True, "port": sock.getsockname()[1], "path": PATH}), flush=True)
    server.run(sockets=[sock])
    return 0


# -- clients -----------------------------------------------------------------------------


def run_input(i: int) -> dict[str, Any]:
    """A `RunAgentInput` (AG-UI 1.0, camelCase JSON) for run `i` on a thread of its own."""
    return {
        "threadId": f"agui-{i}-{uuid.uuid4().hex[:8]}",
        "runId": f"run-{uuid.uuid4().hex}",
        "state": {},
        "messages": [{"id": f"msg-{i}", "role": "user", "content": TASK}],
        "tools": [],
        "context": [],
        "forwardedProps": {},
    }


@dataclass
class _Run:
    first_event: float | None = None
    total: float = 0.0
    events: int = 0
    error: str | None = None


def _check(events: list[dict[str, Any]], delegations: int) -> str | None:
    """Why a run's events are not a successful run with the expected calls, or None."""
    kinds = [e.get("type") for e in events]
    if not kinds or kinds[-1] not in TERMINAL:
        return f"stream ended without a terminal event ({len(kinds)} events)"
    last = events[-1]
    if last["type"] == "RUN_ERROR":
        return f"RUN_ERROR {last.get('code')}: {str(last.get('message'))[:200]}"
    outcome = (last.get("outcome") or {}).get("type", "success")
    text = "".join(e.get("delta", "") for e in events if e.get("type") == "TEXT_MESSAGE_CONTENT")
    results = kinds.count("TOOL_CALL_RESULT")
    if outcome != "success" or text != FINAL_ANSWER or results != delegations:
        return f"outcome {outcome!r}, text {text[:40]!r}, {results} tool results (expected {delegations})"
    return None


async def one_run(client: Any, url: str, i: int, delegations: int) -> _Run:
    """One streamed run, checked; the first `data:` line is the first event."""
    out = _Run()
    events: list[dict[str, Any]] = []
    start = time.perf_counter()
    try:
        async with client.stream(
            "POST", url, json=run_input(i), headers={"Accept": "text/event-stream"}
        ) as response:
            if response.status_code != 200:
                out.error = f"HTTP {response.status_code}"
                return out
            async for line in response.aiter_lines():
                if not line.startswith("data:"):
                    continue
                if out.first_event is None:
                    out.first_event = time.perf_counter() - start
                events.append(json.loads(line[5:]))
    except Exception as exc:  # noqa: BLE001 - a failed run is reported, not raised
        out.error = f"{type(exc).__name__}: {exc}"
        return out
    out.total = time.perf_counter() - start
    out.events = len(events)
    out.error = _check(events, delegations)
    return out


async def _sample_rss(pid: int, result: AguiResult, stop: asyncio.Event) -> None:
    import psutil

    proc = psutil.Process(pid)
    while not stop.is_set():
        with contextlib.suppress(psutil.Error):
            result.server_rss_peak = max(result.server_rss_peak, proc.memory_info().rss)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 0.02)


async def _wait_ready(client: Any, base: str, proc: asyncio.subprocess.Process, deadline: float) -> None:
    """Until the server accepts connections (any HTTP answer on its health path will do)."""
    while True:
        if proc.returncode is not None:
            raise BenchError(f"the AG-UI server exited with {proc.returncode}")
        try:
            await client.get(f"{base}{PATH}/health", timeout=2.0)
            return
        except Exception:  # noqa: BLE001 - not listening yet
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.05)


async def load(client: Any, url: str, spec: AguiSpec, result: AguiResult) -> None:
    """`spec.clients` concurrent clients taking runs from a shared counter until `spec.runs` are done."""
    counter = iter(range(spec.runs))

    async def client_loop() -> None:
        for i in counter:
            run = await one_run(client, url, i, spec.delegations)
            if run.error is not None:
                result.errors.append(run.error)
                continue
            assert run.first_event is not None
            result.first_event.append(run.first_event)
            result.run_time.append(run.total)
            result.events.append(run.events)

    start = time.perf_counter()
    await asyncio.gather(*(client_loop() for _ in range(spec.clients)))
    result.wall = time.perf_counter() - start


async def agui_endpoint(cfg: Config, spec: AguiSpec, server: list[str] | None = None) -> AguiResult:
    """Start the server (`server` is its command line, default `python -m bench.agui`) and load it."""
    try:
        import httpx
        import psutil
    except ImportError as exc:
        return AguiResult(spec, available=False, reason=f"client side: {exc}")
    argv = server or [sys.executable, "-m", "bench.agui", f"--latency={spec.latency}", f"--delegations={spec.delegations}"]
    log = cfg.workdir / "agui-server.log"  # a file, not a pipe: a chatty server must never block on it
    with log.open("wb") as stderr:
        proc = await asyncio.create_subprocess_exec(*argv, cwd=ROOT, stdout=asyncio.subprocess.PIPE, stderr=stderr)
    try:
        assert proc.stdout is not None
        line = await asyncio.wait_for(proc.stdout.readline(), 120)
        try:
            hello = json.loads(line or b"{}")
        except json.JSONDecodeError:
            hello = {}
        if not hello.get("available"):
            await _stop(proc)
            tail = log.read_text(errors="replace")[-1500:]
            reason = hello.get("reason") or f"the server did not start: {tail}"
            return AguiResult(spec, available=False, reason=reason)
        base = f"http://127.0.0.1:{hello['port']}"
        url = f"{base}{hello.get('path', PATH)}"
        result = AguiResult(spec, available=True)
        limits = httpx.Limits(max_connections=spec.clients, max_keepalive_connections=spec.clients)
        async with httpx.AsyncClient(limits=limits, timeout=spec.timeout) as client:
            await _wait_ready(client, base, proc, time.monotonic() + 60)
            for i in range(spec.warmup):
                run = await one_run(client, url, -1 - i, spec.delegations)
                if run.error is not None:
                    tail = log.read_text(errors="replace")[-1500:]
                    raise BenchError(f"AG-UI warm-up run failed: {run.error}\nserver log:\n{tail}")
            server = psutil.Process(proc.pid)
            result.server_rss_start = server.memory_info().rss
            cpu0 = sum(server.cpu_times()[:2])
            stop = asyncio.Event()
            sampler = asyncio.create_task(_sample_rss(proc.pid, result, stop))
            try:
                await load(client, url, spec, result)
            finally:
                stop.set()
                await sampler
            result.server_cpu = sum(server.cpu_times()[:2]) - cpu0
        cfg.progress(
            f"  AG-UI: {result.runs_per_second:.1f} runs/s, {len(result.errors)} failed, server peak "
            f"{result.server_rss_peak / 1024 / 1024:.0f} MB"
        )
        return result
    finally:
        await _stop(proc)


async def _stop(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        proc.terminate()
        try:
            await asyncio.wait_for(proc.wait(), 10)
        except TimeoutError:
            proc.kill()
            await proc.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.agui", description="Serve ours over AG-UI for the benchmark.")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per model call")
    parser.add_argument("--delegations", type=int, default=1)
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    return serve(args.latency, args.delegations)


if __name__ == "__main__":
    raise SystemExit(main())
