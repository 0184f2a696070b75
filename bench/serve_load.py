"""`supervisor-graph serve --workers 2` under many concurrent AG-UI clients, with a
worker SIGKILLed mid-load (SPEC §19, the figures of docs/guarantees.md).

    python -m bench.serve_load [--storage sqlite|postgres] [--clients 100] [--seconds 60] [--no-kill]

The server is the real command in a subprocess (`agent` below: a supervisor making two
parallel delegations and a tool call per turn, each subagent calling a tool; scripted
models with a small latency). Each client keeps a conversation of its own going: a new
thread, then further turns on it. Halfway, one uvicorn worker is killed with SIGKILL
(uvicorn starts a new one). Counted: runs finished, HTTP errors, RUN_ERROR events (a run
refused because the killed worker's lease still held its thread is counted apart: the
client retries it). Then one more message goes to every thread, and every stored history
is checked: each tool call answered exactly once, no result without its call.

Postgres: a fresh database on 127.0.0.1 (trust auth), dropped afterwards.
"""

from __future__ import annotations

import argparse
import asyncio
import json
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

from supervisor_graph import Agent, Memory, create_tool
from supervisor_graph.testing import ScriptedChatModel, delegate, tool_call

__all__ = ["LoadResult", "agent", "main", "problems"]

ROOT = Path(__file__).resolve().parents[1]
STORAGE_ENV = "SG_LOAD_STORAGE"
PATH = "/agent"
RESOURCE = "load"


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


@dataclass
class LoadResult:
    storage: str
    clients: int
    seconds: float
    runs: int = 0
    http_errors: Counter[str] = field(default_factory=Counter)
    run_errors: Counter[str] = field(default_factory=Counter)
    busy_retried: int = 0  # runs refused while the killed worker's lease held the thread
    killed_worker: int | None = None
    threads: int = 0
    threads_out_of_step: dict[str, list[str]] = field(default_factory=dict)
    final_runs: int = 0  # one more message on every thread the clients started
    final_runs_ok: int = 0
    final_errors: Counter[str] = field(default_factory=Counter)  # what the failed ones got

    def summary(self) -> dict[str, Any]:
        return {
            "storage": self.storage, "clients": self.clients, "seconds": self.seconds, "runs": self.runs,
            "runs_per_second": round(self.runs / self.seconds, 1), "http_errors": dict(self.http_errors),
            "run_errors": dict(self.run_errors), "busy_retried": self.busy_retried,
            "killed_worker": self.killed_worker, "threads": self.threads,
            "threads_out_of_step": len(self.threads_out_of_step), "final_runs": self.final_runs,
            "final_runs_ok": self.final_runs_ok, "final_errors": dict(self.final_errors),
        }


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def _postgres() -> Any:
    import psycopg

    name = f"sg_load_{uuid.uuid4().hex[:8]}"
    with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    try:
        yield f"postgresql://postgres@127.0.0.1:5432/{name}"
    finally:
        with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


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


async def _run(client: Any, url: str, thread: str, text: str, result: LoadResult) -> bool:
    """One AG-UI run; True when it finished. A THREAD_BUSY refusal is retried."""
    body = {
        "threadId": thread, "runId": f"run-{uuid.uuid4().hex}", "state": {}, "tools": [], "context": [],
        "messages": [{"id": uuid.uuid4().hex, "role": "user", "content": text}], "forwardedProps": {},
    }
    for _ in range(50):
        last: dict[str, Any] = {}
        try:
            async with client.stream("POST", url, json=body, headers={"accept": "text/event-stream"}) as response:
                if response.status_code != 200:
                    result.http_errors[str(response.status_code)] += 1
                    return False
                async for line in response.aiter_lines():
                    if line.startswith("data:"):
                        last = json.loads(line[5:])
        except Exception as exc:  # noqa: BLE001 - a connection cut by the killed worker counts as an HTTP error
            result.http_errors[type(exc).__name__] += 1
            return False
        if last.get("type") == "RUN_FINISHED":
            return True
        code = str(last.get("code") or last.get("type") or "no terminal event")
        if code == "THREAD_BUSY":
            result.busy_retried += 1
            await asyncio.sleep(0.3)
            continue
        result.run_errors[code] += 1
        return False
    return False


async def _load(url: str, result: LoadResult, threads: set[str], server: subprocess.Popen[bytes], kill: bool) -> None:
    import httpx

    deadline = time.monotonic() + result.seconds
    async with httpx.AsyncClient(timeout=120, limits=httpx.Limits(max_connections=result.clients + 10)) as client:

        async def one_client(i: int) -> None:
            while time.monotonic() < deadline:
                thread = f"load-{i}-{uuid.uuid4().hex[:6]}"
                threads.add(thread)
                for turn in range(3):
                    if time.monotonic() >= deadline:
                        return
                    finished = await _run(client, url, thread, f"turn {turn}", result)
                    result.runs += finished

        async def killer() -> None:
            await asyncio.sleep(result.seconds / 2)
            # uvicorn's supervisor process has the workers as children (and, under
            # multiprocessing, a resource tracker: not a worker)
            workers = [pid for pid in _children(server.pid) if b"resource_tracker" not in _cmdline(pid)]
            if workers:
                result.killed_worker = workers[0]
                os.kill(workers[0], signal.SIGKILL)

        await asyncio.gather(*(one_client(i) for i in range(result.clients)), *([killer()] if kill else []))
        # one more message on every thread: the history must still be valid after the kill
        before = result.http_errors + result.run_errors
        finals = await asyncio.gather(*(_run(client, url, t, "after the load", result) for t in sorted(threads)))
        result.final_runs, result.final_runs_ok = len(finals), sum(finals)
        result.final_errors = (result.http_errors + result.run_errors) - before


async def _check(storage: str, threads: set[str], result: LoadResult) -> None:
    async with Memory(storage) as memory:
        for thread in sorted(threads):
            messages = await memory.get_messages(thread)
            if not messages:
                continue
            result.threads += 1
            found = problems(messages)
            if found:
                result.threads_out_of_step[thread] = found[:3]


def run_load(storage_kind: str, clients: int, seconds: float, kill: bool = True) -> LoadResult:
    result = LoadResult(storage=storage_kind, clients=clients, seconds=seconds)
    with ExitStack() as stack:
        if storage_kind == "postgres":
            storage = stack.enter_context(_postgres())
        else:
            storage = f"file:{stack.enter_context(tempfile.TemporaryDirectory())}/load.db"
        port = _free_port()
        env = {**os.environ, STORAGE_ENV: storage, "PYTHONPATH": str(ROOT)}
        log = stack.enter_context(tempfile.TemporaryFile())
        server = subprocess.Popen(
            [str(Path(sys.executable).with_name("supervisor-graph")), "serve", "bench.serve_load:agent", "--workers", "2",
             "--port", str(port), "--resource", RESOURCE],
            env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, cwd=ROOT,
        )
        stack.callback(lambda: os.killpg(server.pid, signal.SIGKILL) if server.poll() is None else None)
        url = f"http://127.0.0.1:{port}{PATH}"
        _wait_up(port, server, log)
        threads: set[str] = set()
        asyncio.run(_load(url, result, threads, server, kill))
        asyncio.run(_check(storage, threads, result))
    return result


def _wait_up(port: int, server: subprocess.Popen[bytes], log: Any) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.poll() is not None:
            log.seek(0)
            raise RuntimeError(f"serve exited: {log.read().decode(errors='replace')[-2000:]}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                time.sleep(1.5)  # both workers up
                return
        time.sleep(0.2)
    raise RuntimeError("serve did not start within 60 s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.serve_load", description=__doc__.splitlines()[0])
    parser.add_argument("--storage", choices=("sqlite", "postgres"), action="append")
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--no-kill", action="store_true", help="do not kill a worker halfway")
    args = parser.parse_args(argv)
    failed = False
    for kind in args.storage or ["sqlite", "postgres"]:
        result = run_load(kind, args.clients, args.seconds, kill=not args.no_kill)
        print(json.dumps(result.summary()), flush=True)
        if result.threads_out_of_step:
            print(json.dumps(result.threads_out_of_step)[:2000], flush=True)
        failed |= bool(result.threads_out_of_step or result.run_errors or result.final_runs_ok < result.final_runs)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
