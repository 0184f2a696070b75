"""Paused runs by run id, so `approve_tool_call(run_id=...)` finds a run the caller
did not give a thread (SPEC §9: "runs without memory can be resumed by run id").

A long-lived server pauses runs that nobody ever answers, so the registry is bounded:
an entry older than `max_age` seconds is forgotten, and past `max_runs` entries the
oldest are. Forgetting an ephemeral run (one without memory) also deletes its
checkpoints from the process's in-memory saver; a run kept in an agent's memory stays
resumable there with `memory={"thread": ...}`.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

__all__ = ["PausedRun", "PausedRuns", "paused_runs"]


@dataclass(slots=True)
class PausedRun:
    """Where a paused run lives, so it can be resumed by its run id."""

    thread_id: str
    saver: Any
    ephemeral: bool
    resource_id: str | None = None
    paused_at: float = field(default_factory=time.monotonic)


class PausedRuns:
    """Run id -> `PausedRun`, bounded by age and count (see the module docstring)."""

    def __init__(self, max_runs: int = 10_000, max_age: float = 24 * 3600.0) -> None:
        self.max_runs = max_runs
        self.max_age = max_age
        self._runs: OrderedDict[str, PausedRun] = OrderedDict()

    def __len__(self) -> int:
        return len(self._runs)

    def __contains__(self, run_id: object) -> bool:
        return self.get(run_id) is not None  # type: ignore[arg-type]

    def get(self, run_id: str) -> PausedRun | None:
        paused = self._runs.get(run_id)
        if paused is None or time.monotonic() - paused.paused_at > self.max_age:
            return None
        return paused

    async def add(self, run_id: str, paused: PausedRun) -> None:
        self._runs.pop(run_id, None)
        self._runs[run_id] = paused
        now = time.monotonic()
        while self._runs:
            oldest_id, oldest = next(iter(self._runs.items()))
            if len(self._runs) <= self.max_runs and now - oldest.paused_at <= self.max_age:
                break
            del self._runs[oldest_id]
            if oldest.ephemeral:
                await oldest.saver.adelete_thread(oldest.thread_id)

    def pop(self, run_id: str) -> PausedRun | None:
        return self._runs.pop(run_id, None)


# run id -> paused run, for runs resumed by run id
paused_runs = PausedRuns()
