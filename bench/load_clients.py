"""The load generator of `bench.serve_load`: AG-UI clients, in processes of their own.

Each client process runs `clients` concurrent conversations in one asyncio loop (one
httpx connection pool) and reports what it did and how much CPU it spent doing it: a
process near 100% of a core is itself the bottleneck, and its figures are the
generator's, not the server's. It imports httpx only, not the library.

Also here: the CPU figures of the server's processes and of the machine, read from /proc.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["ClientPlan", "ClientReport", "cpu_seconds", "last_event", "limits", "machine_ticks", "post_run", "run_clients", "workers_of"]


@dataclass
class ClientReport:
    """One client process's share: counted runs are those that started after the warm-up."""

    runs: int = 0
    latencies: list[float] = field(default_factory=list)  # seconds, first POST to RUN_FINISHED, of counted runs
    http_errors: Counter[str] = field(default_factory=Counter)
    run_errors: Counter[str] = field(default_factory=Counter)
    busy_retried: int = 0  # runs refused with THREAD_BUSY and sent again
    sent: dict[str, list[str]] = field(default_factory=dict)  # thread -> texts of its runs that finished
    threads: list[str] = field(default_factory=list)  # every thread started (finished runs or not)
    cpu_s: float = 0.0  # this process's CPU time over the load window
    wall_s: float = 0.0

    @property
    def cpu_percent(self) -> float:
        return 100 * self.cpu_s / self.wall_s if self.wall_s else 0.0

    def add(self, other: ClientReport) -> None:
        self.runs += other.runs
        self.latencies += other.latencies
        self.http_errors += other.http_errors
        self.run_errors += other.run_errors
        self.busy_retried += other.busy_retried
        self.sent.update(other.sent)
        self.threads += other.threads


@dataclass(frozen=True)
class ClientPlan:
    url: str
    clients: int  # concurrent conversations in this process
    seconds: float  # the load window
    warmup: float  # seconds at the start whose runs are made but not counted
    prefix: str  # thread ids start with it (unique per process)
    turns: int = 3  # runs per conversation before a client starts a new thread


def last_event(stream: bytes) -> dict[str, Any]:
    """The last `data:` event of a server-sent event stream (only the terminal event matters
    here: parsing each of a run's dozens of events would make the clients the bottleneck)."""
    end = len(stream.rstrip())
    at = stream.rfind(b"data:", 0, end)
    if at < 0:
        return {}
    line = stream[at + 5 : end].split(b"\n", 1)[0]
    try:
        found = json.loads(line)
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


async def post_run(client: Any, url: str, thread: str, text: str, report: ClientReport) -> bool:
    """One AG-UI run; True when it finished (RUN_FINISHED). A THREAD_BUSY refusal is retried."""
    body = {
        "threadId": thread, "runId": f"run-{uuid.uuid4().hex}", "state": {}, "tools": [], "context": [],
        "messages": [{"id": uuid.uuid4().hex, "role": "user", "content": text}], "forwardedProps": {},
    }
    for _ in range(50):
        try:
            async with client.stream("POST", url, json=body, headers={"accept": "text/event-stream"}) as response:
                if response.status_code != 200:
                    report.http_errors[str(response.status_code)] += 1
                    return False
                chunks = [chunk async for chunk in response.aiter_bytes()]
        except Exception as exc:  # noqa: BLE001 - a stream cut by a killed worker counts as an HTTP error
            report.http_errors[type(exc).__name__] += 1
            return False
        last = last_event(b"".join(chunks))
        if last.get("type") == "RUN_FINISHED":
            report.sent.setdefault(thread, []).append(text)
            return True
        code = str(last.get("code") or last.get("type") or "no terminal event")
        if code == "THREAD_BUSY":
            report.busy_retried += 1
            await asyncio.sleep(0.3)
            continue
        report.run_errors[code] += 1
        return False
    return False


def limits(clients: int) -> Any:
    """A new connection per run: uvicorn's workers share one listening socket and a worker's
    event loop accepts every pending connection at once, so connections kept alive from the
    start stay where they landed (measured: one of two workers at 89% of a core, the other
    at 30%). A connection per run lands on whichever worker accepts first, as the
    connections of many separate users would."""
    import httpx

    return httpx.Limits(max_connections=clients + 10, max_keepalive_connections=0)


async def _load(plan: ClientPlan, report: ClientReport) -> None:
    import httpx

    began = time.monotonic()
    counted_from, deadline = began + plan.warmup, began + plan.warmup + plan.seconds
    cpu0 = None
    async with httpx.AsyncClient(timeout=120, limits=limits(plan.clients)) as client:

        async def one_client(i: int) -> None:
            while time.monotonic() < deadline:
                thread = f"{plan.prefix}-{i}-{uuid.uuid4().hex[:6]}"
                report.threads.append(thread)
                for turn in range(plan.turns):
                    started = time.monotonic()
                    if started >= deadline:
                        return
                    finished = await post_run(client, plan.url, thread, f"turn {turn}", report)
                    if finished and started >= counted_from:
                        report.runs += 1
                        report.latencies.append(time.monotonic() - started)

        async def window() -> None:
            nonlocal cpu0
            await asyncio.sleep(max(0.0, counted_from - time.monotonic()))
            cpu0 = time.process_time()

        await asyncio.gather(window(), *(one_client(i) for i in range(plan.clients)))
    # the window is the counted part: runs that were still going at the deadline are in it too
    report.wall_s = time.monotonic() - counted_from
    report.cpu_s = time.process_time() - (cpu0 if cpu0 is not None else 0.0)


def run_clients(plan: ClientPlan, ready: Any, go: Any, out: Any) -> None:
    """A client process's body: import, say ready, wait for the start, load, hand the report back."""
    import httpx  # noqa: F401 - imported before the start, not inside the timed window

    ready.set()
    go.wait()
    report = ClientReport()
    asyncio.run(_load(plan, report))
    out.put(report)


# -- CPU figures of the server and the machine -----------------------------------------------


def _children(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def workers_of(server: subprocess.Popen[bytes]) -> list[int]:
    """uvicorn's supervisor process has the workers as children (and, under
    multiprocessing, a resource tracker: not a worker); with one worker it serves itself."""
    return [pid for pid in _children(server.pid) if b"resource_tracker" not in _cmdline(pid)] or [server.pid]


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far (0 once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine_ticks() -> tuple[int, int]:
    """(busy, total) CPU ticks of the whole machine so far, every process of every user."""
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:9]]
    idle = values[3] + values[4]  # idle, iowait
    return sum(values) - idle, sum(values)
