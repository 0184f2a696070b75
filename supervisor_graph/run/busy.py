"""Double texting (SPEC §29): what a new message does to a thread a run holds.

`on_busy=` on the facade calls (and `--on-busy` / `forwardedProps.on_busy` when served)
takes LangGraph Platform's `multitask_strategy` meanings:

- `reject` (the default): `ThreadBusyError` at once;
- `enqueue`: the call waits in the thread's queue and runs when the runs before it end;
- `interrupt`: the running run is asked to stop; it stops at once (as an abort does: the
  steps it finished are kept, every tool call it made is answered), then the call runs;
- `rollback`: as `interrupt`, and the stopped run's writes are discarded (the thread is
  forked from the checkpoint before that run's input), so the call runs as if that run
  had never started. A thread paused on approvals is not busy: a new message there is
  refused as before (`PendingApprovalError`), except with `rollback`, which discards the
  paused run, its approvals with it.

The thread's lease decides everything (`checkpointers/leases.py`: the queue, the stop
request, the hand-over), so it holds across processes sharing the memory. A run with no
contention pays nothing for it: the queue is consulted inside the lease's own statements
and a holder's process looks for stop requests on a timer, not per step.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from datetime import datetime
from typing import Any, Literal, TypeVar, get_args

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END

from supervisor_graph.declaration.errors import ThreadBusyError
from supervisor_graph.memory.lease import ThreadLease

__all__ = [
    "ON_BUSY",
    "OnBusy",
    "check_on_busy",
    "discard_last_run",
    "raise_if_lost",
    "stop_reason",
    "take_thread",
    "until_stopped",
]

T = TypeVar("T")

OnBusy = Literal["reject", "enqueue", "interrupt", "rollback"]
ON_BUSY: tuple[str, ...] = get_args(OnBusy)


def check_on_busy(value: Any, where: str = "on_busy") -> str:
    """`value` when it names a strategy; otherwise a `ValueError` listing the four."""
    if value not in ON_BUSY:
        raise ValueError(f"{where} must be one of {', '.join(repr(s) for s in ON_BUSY)}, not {value!r}")
    return str(value)


async def take_thread(lease: ThreadLease, on_busy: str, abort: Any = None) -> None:
    """Take the thread's lease; when a run holds it, act as `on_busy` says."""
    if on_busy == "reject":
        await lease.acquire()
        return
    try:
        await lease.acquire()
        return
    except ThreadBusyError:
        pass
    await lease.wait_turn(None if on_busy == "enqueue" else on_busy, abort)


def stop_reason(kind: str) -> str:
    """The abort reason of a run a new message stopped."""
    return f"a new message on the thread stopped this run (on_busy={kind!r})"


async def discard_last_run(graph: Any, saver: Any, config: RunnableConfig, since: float | None = None) -> bool:
    """Put the thread back as it was before its latest run began: fork it from the
    checkpoint before that run's input (which goes too), or delete it when that run was
    its first. `since`: only when that input was saved at or after this time (a run
    stopped before it saved anything leaves the thread as it is). False: nothing done.

    A fork rather than deleting checkpoints: every saver supports it, and what other
    processes read stays consistent (the newest checkpoint is the thread's state)."""
    thread_id = (config.get("configurable") or {})["thread_id"]
    root: RunnableConfig = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    latest = None
    async for item in saver.alist(root, filter={"source": "input"}, limit=1):
        latest = item
    if latest is None:
        return False
    if since is not None and datetime.fromisoformat(latest.checkpoint["ts"]).timestamp() < since:
        return False
    if latest.parent_config is None:
        await saver.adelete_thread(thread_id)
        return True
    before = latest.parent_config["configurable"]["checkpoint_id"]
    # the run's metadata (the thread's owner) goes on the fork, as on every checkpoint
    fork: RunnableConfig = {
        "configurable": {"thread_id": thread_id, "checkpoint_ns": "", "checkpoint_id": before},
        "metadata": dict(config.get("metadata") or {}),
    }
    await graph.aupdate_state(fork, None, as_node=END)
    return True


def raise_if_lost(lease: ThreadLease | None) -> None:
    """Raise the `StorageUnavailableError` that ended the run, when its lease database went
    away (`ThreadLease.failure`): the run stopped for that, not for a stop request."""
    if lease is not None and lease.failure is not None:
        raise lease.failure


async def until_stopped(coro: Coroutine[Any, Any, T], lease: ThreadLease) -> tuple[T | None, bool]:
    """`Run.until_aborted` when only a new message may stop the run: run `coro` in this
    task and cancel it when the lease hears a stop, instead of a task and a waiter per
    run (what most runs, stopped by nobody, would pay for nothing)."""
    assert lease.stopped is not None
    if lease.stopped.is_set():
        coro.close()
        raise_if_lost(lease)
        return None, True
    current = asyncio.current_task()
    assert current is not None
    stopping = False

    def wake() -> None:
        nonlocal stopping
        stopping = True
        current.cancel()

    lease.waker = wake
    try:
        return await coro, False
    except asyncio.CancelledError:
        if not stopping:
            raise
        current.uncancel()
        raise_if_lost(lease)
        return None, True
    finally:
        lease.waker = None
