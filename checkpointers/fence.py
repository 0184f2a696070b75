"""A run writes its thread only while it holds the thread's lease (issue 46).

A lease lapses when its holder stops renewing it: a crashed process, or one held up past
the lease's ttl (a stalled event loop, a long pause of the garbage collector, a machine
short of CPU). Another process may then take the thread and run the next message. If the
held-up run went on writing when it woke, its checkpoints would continue its own branch of
the thread, and the thread's newest checkpoint would lack what the other run stored: a
message its client was told had finished, lost.

So each run puts its lease in its config (`FENCE_KEY`), and the saver asks it before each
write (`hold_fence`): a lease renewed recently enough answers at once, from the clock; one
that may have lapsed checks with the database (a renewal), and a lease found taken raises
`LeaseLapsedError` before anything is written. The run then ends with that error, without
a repair (its thread is another run's now).
"""

from __future__ import annotations

import time
from typing import Any, Protocol

from langchain_core.runnables import RunnableConfig

from supervisor_graph.checkpointers.outages import StorageUnavailableError

__all__ = ["FENCE_KEY", "Fence", "LeaseLapsedError", "hold_fence"]

# configurable key of a run's lease (a `__` key: LangGraph keeps it out of checkpoint metadata)
FENCE_KEY = "__sg_fence"


class LeaseLapsedError(StorageUnavailableError):
    """This run's hold on its thread lapsed (its process was held up past the lease's ttl)
    and another run took the thread: nothing more of this run is saved. Send the message
    again; the thread holds what the other run stored."""

    def __init__(self, thread_id: str) -> None:
        super().__init__(
            f"the run's lease on thread {thread_id!r} lapsed while its process was held up, and another run took "
            "the thread; nothing more of this run was saved",
            "timeout",
        )


class Fence(Protocol):
    # `time.monotonic()` until which the lease is surely held (it was renewed recently)
    held_until: float

    async def ensure_held(self) -> None:
        """Return while the lease is this run's (renewing it); raise `LeaseLapsedError`
        once it is not."""


async def hold_fence(config: RunnableConfig | None) -> None:
    """Before a write: the writing run's lease must still be held (nothing to check for a
    write made outside a run with a thread). A clock read while the lease is fresh."""
    fence: Any = ((config or {}).get("configurable") or {}).get(FENCE_KEY)
    if fence is not None and time.monotonic() >= fence.held_until:
        await fence.ensure_held()
