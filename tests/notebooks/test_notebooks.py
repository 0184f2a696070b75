"""Every notebook in notebooks/ runs, top to bottom, offline (SPEC §2: notebooks are
executed by the test suite, so a broken one fails CI).

Each runs in a fresh IPython kernel of this interpreter (not whatever `python3` kernel
Jupyter happens to find), in a temporary working directory, with no provider keys.
Outputs are never written back: notebooks are committed without outputs.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
KERNEL = "supervisor-graph-tests"


@pytest.fixture(scope="module")
def kernel_path(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A Jupyter data dir with one kernel spec: this interpreter running ipykernel."""
    root = tmp_path_factory.mktemp("jupyter")
    spec = root / "kernels" / KERNEL
    spec.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": KERNEL, "language": "python"}))
    return str(root)


def test_the_expected_notebooks_exist() -> None:
    names = [path.stem for path in NOTEBOOKS]
    for topic in (
        "quick_start",
        "delegation_hooks",
        "approvals_and_suspend",
        "scorers",
        "memory_and_threads",
        "embedding",
        "agui",
        "background_and_versions",
        "remote_subagents",
    ):
        assert any(topic in name for name in names), f"no notebook about {topic}: {names}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_has_no_outputs(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert not cell.outputs and cell.execution_count is None, (
                f"{path.name}: clear the outputs before committing"
            )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kernel_path: str) -> None:
    for key in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "LANGSMITH_API_KEY", "LANGCHAIN_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("LANGSMITH_TRACING", "false")
    monkeypatch.setenv("JUPYTER_PLATFORM_DIRS", "1")
    monkeypatch.setenv("JUPYTER_PATH", kernel_path)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb, kernel_name=KERNEL, timeout=120, startup_timeout=60, resources={"metadata": {"path": str(tmp_path)}}
    )
    try:
        client.execute()
    except CellExecutionError as exc:
        pytest.fail(f"{path.name} failed:\n{exc}", pytrace=False)
