"""npm packages the tests drive (the TypeScript AG-UI client, the MCP conformance suite),
installed with the machine's npm into a cache folder. Without node, npm or the registry
a test cannot run: it skips loudly on a developer's machine and fails under CI."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

__all__ = ["npm_install", "unavailable"]


def unavailable(what: str, reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{what} cannot run in CI: {reason}")
    print(f"\n{'!' * 20} {what} SKIPPED: {reason} {'!' * 20}")
    pytest.skip(reason)


def npm_install(npm: str, folder: Path, spec: str, manifest: str, installed: Path, what: str) -> None:
    """`npm install spec` in `folder` (with `manifest` as its package.json) unless
    `installed` (a package.json of the installed package) is there already."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "package.json").write_text(manifest)
    try:
        proc = subprocess.run([npm, "install", "--no-audit", "--no-fund", spec], cwd=folder, capture_output=True, text=True, timeout=240)
    except subprocess.TimeoutExpired:
        unavailable(what, f"npm install {spec} timed out (is the npm registry reachable?)")
    if proc.returncode != 0 or not installed.is_file():
        unavailable(what, f"npm install {spec} failed (is the npm registry reachable?):\n{proc.stderr[-2000:]}")
