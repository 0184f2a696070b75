"""The shipped fake OpenAI-compatible server (`python -m
supervisor_graph.testing.openai_server`), started on its own as the README says, drives
`supervisor-graph demo --model openai/...` offline over real HTTP."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_demo_runs_on_the_fake_server_started_on_its_own() -> None:
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "supervisor_graph.testing.openai_server", "--port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while socket.socket().connect_ex(("127.0.0.1", port)) != 0:
            assert server.poll() is None and time.monotonic() < deadline, server.stdout.read() if server.stdout else ""
            time.sleep(0.1)
        env = {**os.environ, "OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1", "OPENAI_API_KEY": "offline"}
        demo = subprocess.run(
            [str(Path(sys.executable).with_name("supervisor-graph")), "demo", "--model", "openai/gpt-5-mini", "--approve-all"],
            capture_output=True, text=True, env=env, timeout=120,
        )
        assert demo.returncode == 0, demo.stderr[-2000:]
        assert "research-agent answered" in demo.stdout and "Done: Answer to: Research" in demo.stdout
        assert "tokens: 33 in, 21 out" in demo.stdout  # streamed usage from the server
    finally:
        server.terminate()
        server.wait(10)


def test_the_default_reply_reports_a_background_outcome_instead_of_delegating_again() -> None:
    from supervisor_graph.testing.openai_server import default_reply

    tools = [{"type": "function", "function": {"name": "agent-research_agent"}}]
    asked = {"messages": [{"role": "user", "content": "Research X"}], "tools": tools}
    assert default_reply(asked) == {"tool": "agent-research_agent", "args": {"prompt": "Research X"}}
    outcome = {"role": "user", "content": "[Background task bg_1 completed]\nfacts"}
    assert default_reply({"messages": [*asked["messages"], outcome], "tools": tools}) == (
        "Done: [Background task bg_1 completed]\nfacts"
    )
