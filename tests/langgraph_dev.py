"""`langgraph dev` in a subprocess, for the tests that need a real LangGraph API server
(Studio's view of the example, remote subagents): offline (no version check, no CLI
analytics, no tracing), in a temporary folder with a copy of the package, on a free
loopback port, in a process group of its own that is killed even when a test fails."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[1]
LANGGRAPH = Path(sys.executable).with_name("langgraph")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _tail(path: Path, lines: int = 40) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else "(no log)"


@contextmanager
def langgraph_dev(work: Path, config: dict[str, Any]) -> Iterator[str]:
    """Serve `config` (a `langgraph.json` document) from `work`; yields the base URL."""
    assert LANGGRAPH.exists(), "langgraph-cli[inmem] is missing: pip install -e '.[dev]'"
    (work / "langgraph.json").write_text(json.dumps(config))
    # copytree follows the supervisor_graph/nodes and supervisor_graph/checkpointers symlinks
    shutil.copytree(ROOT / "supervisor_graph", work / "supervisor_graph", ignore=shutil.ignore_patterns("__pycache__"))
    env = {
        **os.environ,
        "LANGGRAPH_NO_VERSION_CHECK": "true",  # the server's only outgoing call
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",  # the CLI's usage report
        "LANGSMITH_TRACING": "false",
        "LANGCHAIN_TRACING_V2": "false",
    }
    port = _free_port()
    for key in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "LANGSMITH_API_KEY", "LANGCHAIN_API_KEY"):
        env.pop(key, None)
    log = work / "server.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [str(LANGGRAPH), "dev", "--no-browser", "--no-reload", "--n-jobs-per-worker", "10", "--host", "127.0.0.1", "--port", str(port)],
            cwd=work,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, killed below
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                pytest.fail(f"langgraph dev exited with {proc.returncode}:\n{_tail(log)}")
            try:
                if httpx.get(f"{url}/ok", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"langgraph dev was not healthy within 60 s:\n{_tail(log)}")
            time.sleep(0.2)
        yield url
    finally:
        _stop(proc)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 5)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


