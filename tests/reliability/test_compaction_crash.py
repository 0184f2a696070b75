"""SPEC §25 with real processes: a compaction survives a SIGKILL right after the step
that wrote it. A worker talks on one thread until its input outgrows `max_tokens`; the
step that summarised is saved before the tool it dispatched starts, and the worker is
SIGKILLed inside that tool. A new process then sends one more message: the thread is
valid (every tool call answered exactly once, the interrupted one by the repair), the
stored summary is what its model sees first, and the summariser is never called again
(tests/reliability/compaction_worker.py counts its calls in a file)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.reliability.test_crash_transcripts import problems

WORKER = Path(__file__).with_name("compaction_worker.py")


def test_a_compaction_survives_a_sigkill_right_after_it_and_is_not_recomputed(shared_storage: str, tmp_path: Path) -> None:
    summaries = tmp_path / "summaries.log"
    proc = subprocess.Popen(
        [sys.executable, str(WORKER), shared_storage, "run", str(summaries)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready", proc.stderr.read() if proc.stderr else ""
    line = proc.stdout.readline().strip()
    assert line == "compacted", (line, proc.stderr.read() if proc.stderr else "")
    proc.kill()  # SIGKILL, inside the tool the compacting step dispatched
    proc.wait(10)
    assert summaries.read_text().splitlines() == ["summary"]

    check = subprocess.run(
        [sys.executable, str(WORKER), shared_storage, "check", str(summaries)], capture_output=True, text=True, timeout=120
    )
    assert check.returncode == 0, check.stderr[-3000:]
    report: dict[str, Any] = json.loads(check.stdout.strip().splitlines()[-1])
    assert summaries.read_text().splitlines() == ["summary"]  # reused, not recomputed
    assert report["record"]["summary"].startswith("summary of")
    assert report["summary_first"] == [True]  # the model saw the stored summary first
    assert report["text"].startswith("answer")
    assert not problems(report["stored"]), problems(report["stored"])
    assert report["interrupted"] == 1  # the killed tool's call, closed by the repair
    assert not any(problems(i) for i in report["inputs"])
