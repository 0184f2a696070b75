"""The regression guard (issues 17, 23): a short interleaved timing of ours through the
facade and through the compiled graph, the floor and LangChain's `create_agent` (in
memory, 1 and 5 delegations, workers without and with a tool) whose ratios must not be
more than 25% worse than the figures committed in `bench/guard.json`.

`python -m bench --quick` runs it (CI runs that) and exits 1 on a regression;
`python -m bench --write-guard` measures with more runs and rewrites the file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.contenders import Script
from bench.peers import peer_timing
from bench.stats import median

__all__ = ["GUARD_FILE", "TOLERANCE", "GuardCheck", "measure", "write"]

GUARD_FILE = Path(__file__).with_name("guard.json")
TOLERANCE = 1.25
RATIOS = (("ours", "floor"), ("ours", "create_agent"), ("ours_graph", "floor"), ("ours_graph", "create_agent"))
NAMES = ("ours", "ours_graph", "floor", "create_agent")


@dataclass
class GuardCheck:
    name: str  # "ours/floor memory N=1"
    committed: float
    now: float

    @property
    def ok(self) -> bool:
        return self.now <= self.committed * TOLERANCE


async def ratios(runs: int, warmup: int, workdir: Path) -> dict[str, float]:
    """Tool-less workers as before, and workers with a tool (issue 23: " tools" in the name)."""
    out = {}
    for suffix, script in (("", None), (" tools", Script(worker_tool=True))):
        measured = await peer_timing(("memory",), (1, 5), runs, warmup, workdir, names=NAMES, script=script)
        for (kind, n), samples in measured["cells"].items():
            for a, b in RATIOS:
                out[f"{a}/{b}{suffix} {kind} N={n}"] = median(samples[a]) / median(samples[b])
    return out


async def measure(runs: int, warmup: int, workdir: Path) -> list[GuardCheck]:
    committed: dict[str, Any] = json.loads(GUARD_FILE.read_text()) if GUARD_FILE.exists() else {}
    now = await ratios(runs, warmup, workdir)
    return [GuardCheck(name, float(committed["ratios"][name]), value) for name, value in now.items() if name in committed.get("ratios", {})]


async def write(runs: int, warmup: int, workdir: Path) -> dict[str, float]:
    now = await ratios(runs, warmup, workdir)
    GUARD_FILE.write_text(json.dumps({"runs": runs, "ratios": {k: round(v, 3) for k, v in now.items()}}, indent=2) + "\n")
    return now
