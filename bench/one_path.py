"""Issue 23: one execution path, fast wherever the graph runs.

Two measurements, each an interleaved run of every contender (`peer_timing`):
- **tool-less workers** and **workers with tools** (each worker calls `lookup` once,
  then answers), for ours through the facade (`ours`, `generate`) and through the
  compiled graph (`ours_graph`, `graph.ainvoke`, as Studio, `langgraph dev`, Aegra and
  embedding apps run it), the floor, langgraph-supervisor and the peers that take tools
  in workers;
- checkpoints per extra delegation with a worker tool call (1 and 5 delegations on a
  counting saver), for both ways of running ours.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.contenders import Script, build
from bench.peers import available_peers, peer_timing
from bench.savers import COUNTING, Storage
from bench.scenarios import run_checked

__all__ = ["NAMES", "OnePath", "measure"]

# the peers that take tools in their workers and are quick enough to interleave
NAMES = ("ours", "ours_graph", "floor", "incumbent", "create_agent", "openai_agents")


@dataclass
class OnePath:
    tool_less: dict[str, Any] = field(default_factory=dict)  # peer_timing's result
    tools: dict[str, Any] = field(default_factory=dict)
    # (contender, kind) -> checkpoints stored by one run, per number of delegations
    checkpoints: dict[tuple[str, str], dict[int, int]] = field(default_factory=dict)


async def _checkpoints(name: str, kind: str, n: int, workdir: Path) -> int:
    path = workdir / f"one-path-{name}-{kind}-{n}.db" if kind == "sqlite" else None
    contender = await build(name, n, Storage(kind, path, counting=True), Script(worker_tool=True))
    try:
        await run_checked(contender, "warm up", "warmup")
        saver = await contender.saver()
        assert isinstance(saver, COUNTING)
        saver.counts.reset()
        await run_checked(contender, "measured", "measured")
        return saver.counts.checkpoints
    finally:
        await contender.aclose()


async def measure(kinds: tuple[str, ...], ns: tuple[int, ...], runs: int, warmup: int, workdir: Path) -> OnePath:
    names = tuple(n for n in NAMES if n not in ("create_agent", "openai_agents") or n in available_peers())
    out = OnePath()
    out.tool_less = await peer_timing(kinds, ns, runs, warmup, workdir, names=names)
    out.tools = await peer_timing(kinds, ns, runs, warmup, workdir, names=names, script=Script(worker_tool=True))
    for name in ("ours", "ours_graph"):
        for kind in kinds:
            out.checkpoints[(name, kind)] = {n: await _checkpoints(name, kind, n, workdir) for n in sorted({1, *ns})}
    return out
