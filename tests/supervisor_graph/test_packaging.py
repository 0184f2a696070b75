"""One import name (SPEC §2): the distribution installs `supervisor_graph` only, and a
user's project with its own `nodes.py` and `checkpointers/` imports and runs it."""

from __future__ import annotations

import os
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
    for module in ("nodes/state.py", "nodes/delegation/control.py", "checkpointers/urls.py", "checkpointers/compat.py"):
        assert f"supervisor_graph/{module}" in names


def _checkout_without_symlinks(dest: Path) -> None:
    """The working tree as git writes it with `core.symlinks=false` (Windows without
    developer mode): every symlink becomes a small text file holding its target."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, check=True,
    ).stdout.decode().split("\0")
    for name in filter(None, listed):
        source, target = ROOT / name, dest / name
        if not source.exists() and not source.is_symlink():
            continue  # deleted in the working tree, not yet committed
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            target.write_text(str(source.readlink()))
        elif source.is_file():
            target.write_bytes(source.read_bytes())


def _expected_modules() -> set[str]:
    """Every module of the three source folders, named as the wheel installs it."""
    names = set()
    for folder, prefix in (("supervisor_graph", "supervisor_graph"), ("nodes", "supervisor_graph/nodes"),
                           ("checkpointers", "supervisor_graph/checkpointers")):
        for path in (ROOT / folder).rglob("*.py"):
            relative = path.relative_to(ROOT / folder)
            if folder == "supervisor_graph" and relative.parts[0] in ("nodes", "checkpointers"):
                continue  # the symlinks: counted through their folders
            names.add(f"{prefix}/{relative.as_posix()}")
    return names


def test_a_checkout_without_symlinks_installs_every_module(tmp_path: Path) -> None:
    checkout, wheels, target, project = (tmp_path / d for d in ("checkout", "wheels", "site", "project"))
    _checkout_without_symlinks(checkout)
    assert (checkout / "supervisor_graph" / "nodes").is_file()  # what such a checkout holds
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(wheels), str(checkout)],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    [wheel] = wheels.glob("supervisor_graph-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = _expected_modules() - names
    assert not missing, f"modules the wheel lacks: {sorted(missing)}"
    assert "supervisor_graph/nodes" not in names and "supervisor_graph/checkpointers" not in names
    assert any(n.startswith("supervisor_graph/agui/playground/") for n in names)
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    project.mkdir()
    (project / "nodes.py").write_text("MINE = True\n")
    (project / "checkpointers").mkdir()
    (project / "checkpointers" / "__init__.py").write_text("MINE = True\n")
    check = f"import supervisor_graph; assert supervisor_graph.__file__.startswith({str(target)!r})\n"
    proc = subprocess.run(
        [sys.executable, "-c", check + SCRIPT], cwd=project, capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(target)},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["done", "memory"]
