"""An mkdocs hook: each notebook of `notebooks/` becomes a page of the site (its markdown
cells as they are, its code cells as python blocks; outputs are not committed) and the
`.ipynb` itself is published beside it for download. No plugin, no network."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


def page(notebook: Path) -> str:
    cells = json.loads(notebook.read_text())["cells"]
    parts = []
    for cell in cells:
        source = "".join(cell["source"]).strip()
        if not source:
            continue
        parts.append(source if cell["cell_type"] == "markdown" else f"```python\n{source}\n```")
    if not parts or not parts[0].startswith("# "):
        parts.insert(0, f"# {notebook.stem}")
    parts.insert(1, f"[Download `{notebook.name}`]({notebook.name}) (`notebooks/{notebook.name}` in the repository).")
    return "\n\n".join(parts) + "\n"


def on_files(files: Files, config: Any) -> Files:
    for notebook in sorted(NOTEBOOKS.glob("*.ipynb")):
        files.append(File.generated(config, f"notebooks/{notebook.stem}.md", content=page(notebook)))
        files.append(File.generated(config, f"notebooks/{notebook.name}", abs_src_path=str(notebook)))
    return files
