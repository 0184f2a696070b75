"""The documentation site (SPEC §26, issue 30 item 2): `mkdocs build --strict` passes (no
broken link or anchor, no page left out of the nav, no docstring warning), every public
name has its API entry, and the README stays the front door that links to every page.

The site's code blocks run in `tests/supervisor_graph/test_readme_snippets.py`, the
notebooks in `tests/notebooks/`.
"""

from __future__ import annotations

import importlib
import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
README = REPO / "README.md"
# The modules whose public names the API reference documents.
PUBLIC = (
    "supervisor_graph", "supervisor_graph.testing", "supervisor_graph.agui", "supervisor_graph.guardrails",
    "supervisor_graph.evals",
)
_DIRECTIVE = re.compile(r"^::: ([\w.]+)$", re.M)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
    assert "WARNING" not in proc.stderr, proc.stderr[-6000:]
    return out


def public_names() -> set[str]:
    return {f"{module}.{name}" for module in PUBLIC for name in importlib.import_module(module).__all__}


def documented() -> list[str]:
    return [m for page in sorted((DOCS / "api").glob("*.md")) for m in _DIRECTIVE.findall(page.read_text())]


def test_the_site_builds_strict(site: Path) -> None:
    assert (site / "index.html").is_file() and (site / "api" / "agents" / "index.html").is_file()
    assert (site / "notebooks" / "01_quick_start.ipynb").is_file()  # published beside its page


def test_no_undocumented_public_name() -> None:
    names = documented()
    assert len(names) == len(set(names)), "a name documented twice"
    assert set(names) == public_names(), (
        f"missing from docs/api/: {sorted(public_names() - set(names))}; not public: {sorted(set(names) - public_names())}"
    )


def test_every_public_class_and_function_has_a_docstring_of_its_own() -> None:
    bare = []
    for qualified in sorted(public_names()):
        module, _, name = qualified.rpartition(".")
        obj = getattr(importlib.import_module(module), name)
        if not (inspect.isclass(obj) or inspect.isroutine(obj)):
            continue  # constants and type aliases: their docstrings are the source's, which the site renders
        own = obj.__dict__.get("__doc__") if inspect.isclass(obj) else obj.__doc__  # a class's, not its base's
        if not (own or "").strip():
            bare.append(qualified)
    assert not bare, f"public names without a docstring: {bare}"


def test_every_public_name_is_rendered(site: Path) -> None:
    html = "".join(p.read_text() for p in (site / "api").rglob("index.html"))
    missing = [name for name in sorted(public_names()) if f'id="{name}"' not in html]
    assert not missing, f"not rendered in the API pages: {missing}"


def test_the_readme_is_the_front_door() -> None:
    text = README.read_text()
    assert len(text.splitlines()) <= 300
    ci = (REPO / ".ci" / "run").read_text()
    test_command = next(line for line in ci.splitlines() if line.startswith("python3 -m venv .venv"))
    assert f"```bash\n{test_command}\n```" in text, "the README's test command must stay the one CI runs"
    assert "pip install -e . && supervisor-graph demo\n" in text
    assert "\n## Quick start\n" in text
    linked = set(re.findall(r"\]\(docs/([\w/.-]+\.md)\)", text))
    pages = {str(p.relative_to(DOCS)) for p in DOCS.glob("*.md")} - {"index.md"}
    assert pages <= linked, f"pages the README's map does not link: {sorted(pages - linked)}"
    assert all((DOCS / page).is_file() for page in linked)
