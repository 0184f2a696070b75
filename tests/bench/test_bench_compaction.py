"""Smoke test of `python -m bench.compaction` (SPEC §25, issue 29 item 6): a short
conversation compacts, and the A/B under the threshold makes no summary and the same
model calls in both arms (the full figures are in bench/RESULTS.md)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_compaction_benchmark_runs_and_reports() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "bench.compaction", "--turns", "12", "--runs", "4", "--max-tokens", "2000"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert "### 12-turn conversation with compaction" in out and "### Under the threshold" in out
    written = re.search(r"(\d+) summaries written", out)
    assert written is not None and int(written.group(1)) >= 1
    rows = [line for line in out.splitlines() if line.startswith("| ours") and " / " in line]
    assert len(rows) == 9
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        calls_a, calls_b = cells[6].split(" / ")
        assert calls_a == calls_b and cells[7] == "0", row
