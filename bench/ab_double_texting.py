"""What double texting (issue 38, SPEC §29) costs a run that no second message meets.

    python -m bench.ab_double_texting [--runs 100]

Interleaved A/B in one process (bench/ab_parity.py's `measure_built_arms`): ours
through the facade and the compiled graph, workers with a tool, N=1 and 5, in memory
and on sqlite. B is the code as it is. A takes out what double texting added to every
facade run: the lease a run holds is not stoppable (no stop event, no watch for stop
requests, so the graph is awaited with no waker), and a release is the plain statement
of before (sqlite: no look for a queued waiter; in memory: no queue or change event to
consult). `on_busy` stays "reject", the default, in both. The compiled graph takes no
lease, so its cells are the control. Reported: median CPU ms per run.
"""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from typing import Any
from unittest import mock

from bench.ab_parity import ab_cli, measure_built_arms

__all__ = ["main", "measure"]


def _without_double_texting() -> ExitStack:
    from supervisor_graph.checkpointers import leases
    from supervisor_graph.memory.lease import ThreadLease
    from supervisor_graph.run import storage

    class NotStoppable(ThreadLease):
        __slots__ = ()

        def __init__(self, leases: Any, thread_id: str, *, stoppable: bool = False) -> None:
            super().__init__(leases, thread_id, stoppable=False)

    async def sql_release(self: Any, thread_id: str, owner: str, *, repair: bool = False, waiting: bool = False) -> None:
        async with self._lock:
            if repair or waiting:
                await self._count(leases._PARK, (repair, waiting, thread_id, owner))
            else:
                await self._count(leases._DELETE, (thread_id, owner))

    async def local_release(self: Any, thread_id: str, owner: str, *, repair: bool = False, waiting: bool = False) -> None:
        if self._held.get(thread_id) == owner:
            del self._held[thread_id]
            if waiting:
                self._waiting.add(thread_id)
            else:
                self._waiting.discard(thread_id)

    stack = ExitStack()
    stack.enter_context(mock.patch.object(storage, "ThreadLease", NotStoppable))  # where a run makes its lease
    stack.enter_context(mock.patch.object(leases._SqlLeases, "release", sql_release))
    stack.enter_context(mock.patch.object(leases.LocalLeases, "release", local_release))
    return stack


async def measure(runs: int, workdir: Path) -> dict[tuple[str, str, int], dict[str, Any]]:
    return await measure_built_arms(runs, workdir, _without_double_texting)


def main(argv: list[str] | None = None) -> int:
    return ab_cli("python -m bench.ab_double_texting", measure, "without double texting", argv)


if __name__ == "__main__":
    raise SystemExit(main())
