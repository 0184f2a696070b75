"""bench/layout.py, the layout figures of issue 48: its table has every row for a ref, and
it reads a tree the way the figures need (the links inside supervisor_graph/ counted
once, `supervisor_graph.nodes.x` and relative imports resolved to the same module,
functions measured from their `def` line)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from bench.layout import CAPABILITIES, main, measure, rows

ROWS = [
    "modules directly in nodes/",
    "folders in nodes/",
    "nodes/ modules, lines",
    "library modules, lines",
    "functions over 80 lines",
    *[f"longest function #{i}" for i in range(1, 6)],
    "modules over 440 lines",
    "modules over 450 lines",
    "longest module",
    *[f"{capability}: own modules / importers" for capability in CAPABILITIES],
    "imports among nodes/ modules: distinct edges",
    "`nodes.spec` imports capability modules",
    "`nodes.options` imports capability modules",
]


def test_the_table_of_head_has_every_row(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["HEAD"]) == 0
    table = capsys.readouterr().out
    lines = table.splitlines()
    assert lines[0].startswith("| figure | `HEAD")
    for row in ROWS:
        assert any(line.startswith(f"| {row}") for line in lines), row
    library = next(line for line in lines if line.startswith("| library modules, lines"))
    assert int(library.split("|")[2].split(",")[0]) > 100


def test_a_tree_is_read_once_with_its_imports_resolved(tmp_path: Path) -> None:
    files = {
        "nodes/__init__.py": "",
        "nodes/steps/__init__.py": "",
        "nodes/steps/budget.py": "X = 1\n",
        "nodes/spec.py": "from supervisor_graph.nodes.steps import budget\nfrom .steps.budget import X\n",
        "nodes/options.py": "import supervisor_graph.nodes.spec\n",
        "checkpointers/__init__.py": "",
        "supervisor_graph/__init__.py": "@staticmethod\ndef long():\n" + "    pass\n" * 85,
    }
    for path, text in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    (tmp_path / "supervisor_graph/nodes").symlink_to("../nodes")
    (tmp_path / "supervisor_graph/checkpointers").symlink_to("../checkpointers")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run(["git", "add", "-A"], cwd=tmp_path, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "t"], cwd=tmp_path, check=True)

    tree = measure("HEAD", tmp_path)
    assert len(tree.modules) == len(files)
    assert tree.modules["nodes.spec"].imports == {"nodes.steps.budget"}
    assert tree.modules["nodes.options"].imports == {"nodes.spec"}
    col = rows(tree)
    assert col["budget: own modules / importers"] == "1 / 1"
    assert col["imports among nodes/ modules: distinct edges"] == "2"
    assert col["functions over 80 lines"] == "1"
    assert col["longest function #1"] == "86 `supervisor_graph/__init__.py:long`"
    assert col["`nodes.spec` imports capability modules"] == "1 (steps.budget)"
