"""One import name (SPEC §2): the distribution installs `supervisor_graph` only, and a
user's project with its own `nodes.py` and `checkpointers/` imports and runs it."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import nodes, checkpointers
from supervisor_graph import Agent
from supervisor_graph.testing import ScriptedChatModel, delegate
from supervisor_graph.nodes.state import SupervisorState
from supervisor_graph.checkpointers.urls import describe

assert nodes.MINE and checkpointers.MINE  # the project's own modules are untouched
research = Agent(id="r", description="Finds.", model=ScriptedChatModel(responses=["facts"]))
parent = Agent(id="p", model=ScriptedChatModel(responses=[delegate("r", "go"), "done"]), agents={"r": research})
print(parent.generate_sync("hi").text, describe(":memory:"))
"""


def test_a_project_with_its_own_nodes_and_checkpointers_runs_the_library(tmp_path: Path) -> None:
    (tmp_path / "nodes.py").write_text("MINE = True\n")
    (tmp_path / "checkpointers").mkdir()
    (tmp_path / "checkpointers" / "__init__.py").write_text("MINE = True\n")
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["done", "memory"]


def test_the_wheel_holds_one_import_name(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    [wheel] = tmp_path.glob("supervisor_graph-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")} == {"supervisor_graph"}
    for module in ("nodes/state.py", "nodes/delegation.py", "checkpointers/urls.py", "checkpointers/compat.py"):
        assert f"supervisor_graph/{module}" in names
