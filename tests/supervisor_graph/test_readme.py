"""The README's Quick start runs as written, pasted into a file, against an
OpenAI-compatible server (the fake one here)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.openai_server import FakeOpenAI

README = Path(__file__).resolve().parents[2] / "README.md"


def quick_start() -> str:
    section = README.read_text().split("## Quick start", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, "the Quick start has no python block"
    return match.group(1)


def reply(body: dict[str, Any]) -> Any:
    names = [t["function"]["name"] for t in body.get("tools") or []]
    last = body["messages"][-1]
    if last["role"] == "tool":
        return "Here is the article."
    if "agent-research_agent" in names:
        return {"tool": "agent-research_agent", "args": {"prompt": "find facts"}}
    return "- facts"


def test_the_quick_start_runs_as_a_script(tmp_path: Path) -> None:
    script = tmp_path / "quick_start.py"
    script.write_text(quick_start())
    with FakeOpenAI(reply) as server:
        env = {**os.environ, "OPENAI_BASE_URL": server.base_url}
        env.pop("OPENAI_API_KEY", None)
        proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Here is the article." in proc.stdout and "stop" in proc.stdout
    assert (tmp_path / "app.db").is_file()
