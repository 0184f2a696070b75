"""The AG-UI server as several processes on one database (SPEC §19, §20): a thread
running on one is `THREAD_BUSY` on every other."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench.aegra import free_port, running
from tests.agui.test_endpoint import body, post


@contextmanager
def serve(storage: str, *extra: str) -> Iterator[str]:
    port = free_port()
    target = f"{Path(__file__).parent / 'served.py'}:supervisor"
    command = [sys.executable, "-m", "supervisor_graph.cli", "serve", target, "--port", str(port), *extra]
    url = f"http://127.0.0.1:{port}/agent"
    log = Path(tempfile.gettempdir()) / f"supervisor-graph-serve-{port}.log"
    with running(command, f"{url}/health", env={**os.environ, "SG_AGUI_STORAGE": storage}, log=log):
        yield url


async def _holding(url: str, payload: dict[str, Any]) -> asyncio.Future[list[dict]]:
    # Wait until the slow run has delegated (it surely holds its thread then), not a
    # guessed second: the helper lives with the double-texting tests, which import this
    # module, so it is imported here when a test runs.
    from tests.double_texting.test_agui_workers import holding

    return await holding(url, payload)


async def test_a_thread_busy_on_one_server_is_busy_on_another(shared_storage: str) -> None:
    with serve(shared_storage) as first, serve(shared_storage) as second:
        slow = await _holding(first, body("shared-thread", "slow work please"))
        events, _, _ = await post(second, body("shared-thread", "hello"))
        assert [e["type"] for e in events][-1] == "RUN_ERROR" and events[-1]["code"] == "THREAD_BUSY"
        done = await slow
        assert done[-1]["type"] == "RUN_FINISHED"
        # once the first run has ended, the other server takes the thread
        events, _, _ = await post(second, body("shared-thread", "hello again"))
        assert events[-1]["type"] == "RUN_FINISHED"


async def test_serve_with_two_workers_keeps_one_run_per_thread(shared_storage: str) -> None:
    with serve(shared_storage, "--workers", "2") as url:
        slow = await asyncio.gather(*(_holding(url, body(f"thread-{i}", "slow work please")) for i in range(2)))
        for i in range(2):
            events, _, _ = await post(url, body(f"thread-{i}", "hello"))
            assert events[-1]["type"] == "RUN_ERROR" and events[-1]["code"] == "THREAD_BUSY"
        for done in await asyncio.gather(*slow):
            assert done[-1]["type"] == "RUN_FINISHED"


def test_serve_refuses_workers_without_a_shared_database() -> None:
    target = f"{Path(__file__).parent / 'served.py'}:supervisor"
    proc = subprocess.run(
        [sys.executable, "-m", "supervisor_graph.cli", "serve", target, "--workers", "2"],
        capture_output=True,
        text=True,
        timeout=60,
        env={k: v for k, v in os.environ.items() if k != "SG_AGUI_STORAGE"},
    )
    assert proc.returncode == 2 and "sqlite or Postgres" in proc.stderr


async def test_thread_ownership_holds_across_server_processes(shared_storage: str) -> None:
    with serve(shared_storage, "--resource", "alice") as alice, serve(shared_storage, "--resource", "bob") as bob:
        events, _, _ = await post(alice, body("alice-thread", "hello"))
        assert events[-1]["type"] == "RUN_FINISHED"
        events, _, _ = await post(bob, body("alice-thread", "let me in"))
        assert events[-1]["type"] == "RUN_ERROR" and events[-1]["code"] == "THREAD_FORBIDDEN"
