"""Aegra servers for the scale-out benchmark and test (SPEC §20).

Aegra (`aegra-api` / `aegra-cli` 0.11) needs Python 3.12+, so it runs from a venv of its
own, `.venv-aegra` at the repository root, built on first use from pyenv's or the
PATH's Python 3.12 with this project installed in it. `scaleout()` measures runs per
second and latency for one server, then two, under the same client load.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.stats import quantile

__all__ = [
    "AEGRA_PACKAGES",
    "ScaleoutResult",
    "ScaleoutSpec",
    "aegra_command",
    "aegra_env",
    "aegra_server",
    "free_port",
    "kill_server",
    "server_alive",
    "python312",
    "running",
    "scaleout",
    "summary",
    "write_config",
]

ROOT = Path(__file__).resolve().parents[1]
VENV = ROOT / ".venv-aegra"
AEGRA_PACKAGES = ["aegra-api==0.11.*", "aegra-cli==0.11.*"]


def python312() -> str | None:
    """A working Python 3.12+ (pyenv's shims exist even where the version is not active)."""
    candidates = [
        os.environ.get("SUPERVISOR_GRAPH_PY312"),
        *sorted(str(p) for p in Path.home().glob(".pyenv/versions/3.1[2-9]*/bin/python3")),
        shutil.which("python3.12"),
        shutil.which("python3.13"),
    ]
    for candidate in candidates:
        if candidate and subprocess.run(
            [candidate, "-c", "import sys; assert sys.version_info >= (3, 12)"], capture_output=True
        ).returncode == 0:
            return candidate
    return None


def aegra_command() -> str | None:
    """`.venv-aegra/bin/aegra`, building the venv first if needed; None without Python 3.12."""
    command = VENV / "bin" / "aegra"
    if command.exists():
        return str(command)
    python = python312()
    if python is None:
        return None
    # a minute or so, once: say so rather than sit silent
    print(f"  building {VENV.name} for the Aegra server ({python}; once, about a minute)", file=sys.stderr, flush=True)
    subprocess.run([python, "-m", "venv", str(VENV)], check=True)
    # with the middleware extra: the parity graphs the tests serve use LangChain's middleware
    subprocess.run([str(VENV / "bin" / "pip"), "install", "-q", *AEGRA_PACKAGES, "-e", f"{ROOT}[middleware]"], check=True, timeout=900)
    return str(command)


def aegra_env(database: str, redis_db: int, **extra: str) -> dict[str, str]:
    """Environment for servers that share one database and one Redis queue."""
    env = {
        **os.environ,
        "DATABASE_URL": database,
        "REDIS_BROKER_ENABLED": "true",
        "REDIS_URL": f"redis://127.0.0.1:6379/{redis_db}",
        "WORKER_QUEUE_KEY": f"sg:{uuid.uuid4().hex[:8]}",  # private to this cluster
        "REDIS_CHANNEL_PREFIX": f"sg:{uuid.uuid4().hex[:8]}:",
        "LANGGRAPH_NO_VERSION_CHECK": "true",
        **extra,
    }
    for key in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        env.pop(key, None)
    return env


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def running(command: list[str], health_url: str, *, env: dict[str, str], log: Path, cwd: Path | None = None) -> Iterator[subprocess.Popen[str]]:
    """`command` in a subprocess (output to `log`), once `health_url` answers 200;
    terminated (killed if need be) afterwards. It leads a process group of its own:
    `aegra serve` runs the server as a child process, and `kill_server` / the cleanup here
    must reach it too."""
    import httpx

    with log.open("w") as out:
        proc = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=cwd, text=True, start_new_session=True
        )
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(health_url, timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{command[0]} did not come up:\n{log.read_text()[-4000:]}")
            time.sleep(0.2)
        yield proc
    finally:
        kill_server(proc, signal.SIGTERM)
        deadline = time.monotonic() + 10
        while server_alive(proc) and time.monotonic() < deadline:
            time.sleep(0.2)
        kill_server(proc, signal.SIGKILL)
        proc.wait(5)


def kill_server(proc: subprocess.Popen[str], sig: int = signal.SIGKILL) -> None:
    """Signal a server started by `running` and every process it started."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, sig)


def server_alive(proc: subprocess.Popen[str]) -> bool:
    """True while any process of the server's group is alive (not counting zombies)."""
    out = subprocess.run(["ps", "-o", "stat=", "--sid", str(proc.pid)], capture_output=True, text=True).stdout
    return any(not state.startswith("Z") for state in out.split())


@contextmanager
def aegra_server(
    aegra: str, config: Path, env: dict[str, str], port: int | None = None
) -> Iterator[tuple[str, subprocess.Popen[str], Path]]:
    """One `aegra serve` on `port` (a free loopback port by default): (url, process, log file)."""
    port = port or free_port()
    url, log = f"http://127.0.0.1:{port}", config.parent / f"aegra-{port}.log"
    command = [aegra, "serve", "--host", "127.0.0.1", "--port", str(port), "--config", str(config)]
    with running(command, f"{url}/health", env=env, log=log, cwd=config.parent) as proc:
        yield url, proc, log


def write_config(folder: Path, graphs: dict[str, str]) -> Path:
    config = folder / "aegra.json"
    config.write_text(json.dumps({"dependencies": [str(ROOT)], "graphs": graphs}))
    return config


# -- the benchmark ---------------------------------------------------------------------


@dataclass(frozen=True)
class ScaleoutSpec:
    runs: int = 60  # per measurement
    clients: int = 20  # concurrent client loops
    warmup: int = 4


@dataclass
class ScaleoutPoint:
    servers: int
    wall: float
    latencies: list[float] = field(default_factory=list)
    failures: int = 0


@dataclass
class ScaleoutResult:
    spec: ScaleoutSpec
    available: bool
    reason: str = ""
    points: list[ScaleoutPoint] = field(default_factory=list)
    versions: dict[str, str] = field(default_factory=dict)


async def _load(urls: list[str], spec: ScaleoutSpec, runs: int) -> ScaleoutPoint:
    from langgraph_sdk import get_client

    clients = [get_client(url=u) for u in urls]
    counter = iter(range(runs))
    point = ScaleoutPoint(servers=len(urls), wall=0.0)

    async def loop() -> None:
        for i in counter:
            client = clients[i % len(clients)]
            began = time.perf_counter()
            try:
                thread = await client.threads.create()
                prompt = {"messages": [{"role": "user", "content": f"Research topic {i} and write an article"}]}
                out = await client.runs.wait(thread["thread_id"], "supervisor", input=prompt)
                if not str(out["messages"][-1]["content"]).startswith(f"Here is your article on topic {i}"):
                    point.failures += 1
            except Exception:  # noqa: BLE001 - counted, reported
                point.failures += 1
            point.latencies.append(time.perf_counter() - began)

    began = time.perf_counter()
    await asyncio.gather(*(loop() for _ in range(spec.clients)))
    point.wall = time.perf_counter() - began
    return point


async def scaleout(spec: ScaleoutSpec, workdir: Path) -> ScaleoutResult:
    """Runs/s and latency of the example supervisor on one Aegra server, then on two
    sharing one Postgres database and one Redis queue, under the same client load."""
    import random
    from importlib import metadata

    aegra = aegra_command()
    if aegra is None:
        return ScaleoutResult(spec, False, "no Python 3.12+ interpreter for the Aegra server")
    try:
        import psycopg

        with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True, connect_timeout=3) as conn:
            name = f"sg_bench_{uuid.uuid4().hex[:10]}"
            conn.execute(f'CREATE DATABASE "{name}"')
    except Exception as exc:  # noqa: BLE001
        return ScaleoutResult(spec, False, f"PostgreSQL not reachable on 127.0.0.1:5432: {type(exc).__name__}")
    if not _redis_up():
        with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        return ScaleoutResult(spec, False, "Redis not reachable on 127.0.0.1:6379")
    database = f"postgresql://postgres@127.0.0.1:5432/{name}"
    folder = workdir / "aegra"
    folder.mkdir(exist_ok=True)
    config = write_config(folder, {"supervisor": str(ROOT / "supervisor_graph/examples/research_write.py") + ":graph"})
    env = aegra_env(database, random.randint(1, 15))
    result = ScaleoutResult(spec, True)
    result.versions = {"aegra-api": _venv_version("aegra-api"), "langgraph-sdk": metadata.version("langgraph-sdk")}
    try:
        with ExitStack() as servers:
            print("  starting the first Aegra server", file=sys.stderr, flush=True)
            first = servers.enter_context(aegra_server(aegra, config, env))
            await _load([first[0]], spec, spec.warmup)
            result.points.append(await _load([first[0]], spec, spec.runs))
            print("  starting the second Aegra server", file=sys.stderr, flush=True)
            second = servers.enter_context(aegra_server(aegra, config, env))
            await _load([second[0]], spec, spec.warmup)
            result.points.append(await _load([first[0], second[0]], spec, spec.runs))
    finally:
        with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    return result


def _redis_up() -> bool:
    import socket

    with socket.socket() as sock:
        sock.settimeout(2)
        return sock.connect_ex(("127.0.0.1", 6379)) == 0


def _venv_version(dist: str) -> str:
    out = subprocess.run(
        [str(VENV / "bin" / "python"), "-c", f"from importlib.metadata import version; print(version({dist!r}))"],
        capture_output=True,
        text=True,
    )
    return out.stdout.strip() or "unknown"


def summary(result: ScaleoutResult) -> list[dict[str, Any]]:
    """One row per measurement: servers, runs/s, p50/p99 latency (s), failures."""
    return [
        {
            "servers": point.servers,
            "runs_per_s": len(point.latencies) / point.wall if point.wall else 0.0,
            "p50": quantile(point.latencies, 0.5) if point.latencies else 0.0,
            "p99": quantile(point.latencies, 0.99) if point.latencies else 0.0,
            "failures": point.failures,
        }
        for point in result.points
    ]
