"""Mastra, the seeds' TypeScript framework, as an optional contender (issue 17).

It runs in its own Node process (`bench/mastra/bench.mjs`, see the README beside it), so its
times are not interleaved with the Python contenders'. To compare fairly, each side also
reports what 3 raw calls of its scripted model cost in its own runtime with no framework
(the calls of a one-delegation run); the report shows both the plain ratio and the ratio of
overheads (run time minus that baseline).

The npm packages (pinned in `bench/mastra/package.json`) are installed once into a cache
folder outside the repository (`$SG_MASTRA_DIR`, default `<tmp>/sg-mastra-bench`) and reused
while the pinned versions match. Without Node/npm, or when the install fails, the result
says why and the report prints it: Mastra is optional, the Python peers are not.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from statistics import median
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from bench.contenders import FINAL_ANSWER, INSTRUCTIONS, PROMPT, WORKER_ANSWER, Script, _models, delegation_policy

__all__ = ["MastraResult", "mastra_timing", "python_baseline"]

HERE = Path(__file__).parent / "mastra"
INSTALL_TIMEOUT = 600.0
RUN_TIMEOUT = 900.0


@dataclass
class MastraResult:
    """Mastra's per-run times (seconds) per (kind, n), and both runtimes' raw-call baselines."""

    cells: dict[tuple[str, int], list[float]] = field(default_factory=dict)
    node_baseline: list[float] = field(default_factory=list)
    python_baseline: list[float] = field(default_factory=list)
    versions: dict[str, str] = field(default_factory=dict)
    unavailable: str | None = None  # why Mastra was not measured

    @property
    def node_base(self) -> float:
        return median(self.node_baseline) if self.node_baseline else 0.0

    @property
    def python_base(self) -> float:
        return median(self.python_baseline) if self.python_baseline else 0.0


def _install_dir() -> Path:
    return Path(os.environ.get("SG_MASTRA_DIR") or Path(tempfile.gettempdir()) / "sg-mastra-bench")


def _installed(folder: Path) -> bool:
    """The cache holds node_modules for exactly the pinned package.json."""
    pinned = (HERE / "package.json").read_text()
    there = folder / "package.json"
    return (
        there.exists()
        and there.read_text() == pinned
        and (folder / "node_modules" / "@mastra" / "core" / "package.json").exists()
    )


def ensure_installed() -> tuple[Path | None, str | None]:
    """(install folder, None) when Mastra can run, else (None, the reason)."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        return None, "Node.js and npm are not on PATH"
    folder = _install_dir()
    if _installed(folder):
        return folder, None
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(HERE / "package.json", folder / "package.json")
    try:
        proc = subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=folder, capture_output=True, text=True, timeout=INSTALL_TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        return None, f"npm install did not finish in {INSTALL_TIMEOUT:.0f} s"
    if proc.returncode != 0 or not _installed(folder):
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        return None, f"npm install failed ({proc.returncode}): {' / '.join(tail)}"
    return folder, None


async def python_baseline(runs: int, warmup: int) -> list[float]:
    """3 raw calls of the scripted chat model with no framework (the calls of a
    one-delegation run: supervisor tool call, worker answer, supervisor final answer)."""
    script = Script(record_calls=False)
    supervisor, (worker,) = _models(1, delegation_policy(1, script), script)
    system, user = SystemMessage(content=INSTRUCTIONS), HumanMessage(content=PROMPT)
    first = await supervisor.ainvoke([system, user])
    call_id = first.tool_calls[0]["id"]
    after = [system, user, first, ToolMessage(content=WORKER_ANSWER, tool_call_id=call_id)]

    async def calls() -> None:
        await supervisor.ainvoke([system, user])
        await worker.ainvoke([SystemMessage(content="Do the task."), user])
        reply = await supervisor.ainvoke(after)
        assert isinstance(reply, AIMessage) and reply.content == FINAL_ANSWER

    samples = []
    for i in range(warmup + runs):
        t0 = time.perf_counter()
        await calls()
        if i >= warmup:
            samples.append(time.perf_counter() - t0)
    return samples


async def mastra_timing(kinds: tuple[str, ...], ns: tuple[int, ...], runs: int, warmup: int, workdir: Path) -> MastraResult:
    result = MastraResult(python_baseline=await python_baseline(runs, warmup))
    folder, reason = await asyncio.to_thread(ensure_installed)
    if folder is None:
        result.unavailable = reason
        print(f"!!!!!!!! Mastra NOT measured: {reason} !!!!!!!!", file=sys.stderr)
        return result
    cmd = [
        shutil.which("node") or "node", str(HERE / "bench.mjs"),
        "--ns", ",".join(map(str, ns)), "--runs", str(runs), "--warmup", str(warmup),
        "--kinds", ",".join(kinds), "--workdir", str(workdir / "mastra"), "--modules", str(folder),
    ]
    try:
        proc = await asyncio.to_thread(subprocess.run, cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        result.unavailable = f"bench.mjs did not finish in {RUN_TIMEOUT:.0f} s"
        return result
    if proc.returncode != 0:
        tail = proc.stderr.strip().splitlines()[-3:]
        result.unavailable = f"bench.mjs failed ({proc.returncode}): {' / '.join(tail)}"
        print(f"!!!!!!!! Mastra NOT measured: {result.unavailable} !!!!!!!!", file=sys.stderr)
        return result
    out: dict[str, Any] = json.loads(proc.stdout)
    for kind, by_n in out["cells"].items():
        for n, samples in by_n.items():
            result.cells[(kind, int(n))] = [ms / 1000 for ms in samples]
    result.node_baseline = [ms / 1000 for ms in out["baseline_ms"]]
    result.versions = {str(k): str(v) for k, v in out.get("versions", {}).items()}
    return result
