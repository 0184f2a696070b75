"""Where a run keeps its checkpoints (SPEC §19): the process's ephemeral saver for a run
without a thread, or the storage of its thread's `Memory`, opened with the thread's
lease taken and the saver fenced by it."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver

from supervisor_graph.checkpointers.fence import FENCE_KEY
from supervisor_graph.memory.lease import ThreadLease
from supervisor_graph.nodes.delegation.control import RUN_IDENTITY_KEYS, check_json
from supervisor_graph.nodes.options import RunOptions
from supervisor_graph.run.busy import take_thread
from supervisor_graph.run.ephemeral import ephemeral_saver, ephemeral_store
from supervisor_graph.run.history import checkpoint_error
from supervisor_graph.run.paused import PausedRun

if TYPE_CHECKING:
    from supervisor_graph.agent import Agent

__all__ = ["RunStorage", "open_thread", "run_storage"]


@dataclass(slots=True)
class RunStorage:
    """Where a run keeps its checkpoints: an ephemeral saver, or a thread's storage (and
    the lease the run holds on the thread)."""

    saver: Any
    store: Any
    ephemeral: bool
    lease: ThreadLease | None
    durability: Any = None
    durable: bool = False
    thread_id: str | None = None
    resource_id: str | None = None
    opened: Any = None


def run_storage(
    agent: Agent,
    opts: RunOptions,
    config: RunnableConfig,
    run_uuid: uuid.UUID,
    paused: PausedRun | None,
    resuming: bool,
    lease: ThreadLease | None,
) -> tuple[RunStorage, RunOptions]:
    """The run's storage when it has no thread of its own (an ephemeral saver), and its
    options with the thread a paused run was on; refuses background subagents without one."""
    ephemeral = opts.memory is None and (paused is None or paused.ephemeral)
    where = RunStorage(saver=None, store=ephemeral_store(), ephemeral=ephemeral, lease=lease)
    if ephemeral:
        where.saver = paused.saver if paused is not None else ephemeral_saver()
        config["configurable"] = {"thread_id": paused.thread_id if paused is not None else f"ephemeral-{run_uuid}"}
        where.durability = "exit"
    elif opts.memory is None and paused is not None:
        opts = opts.model_copy(update={"memory": {"thread": paused.thread_id, "resource": paused.resource_id}})
    if opts.memory is None and agent.has_background_subagents and paused is None and not resuming:
        raise ValueError(
            f"agent {agent.id!r} has background subagents, whose outcomes are reported on a thread: pass "
            "memory={'thread': ...}, or call generate_until_idle / stream_until_idle, which host them for the call"
        )
    return where, opts


async def open_thread(
    where: RunStorage, memory: Any, agent: Agent, opts: RunOptions, config: RunnableConfig, notices_only: bool
) -> None:
    """Open `memory`'s storage for the run's thread and take the thread's lease (unless
    the caller holds it already)."""
    assert opts.memory is not None
    if memory is None:
        raise ValueError(f"memory={{'thread': ...}} needs storage: declare Agent(id={agent.id!r}, memory=Memory(storage=...))")
    opened = where.opened = await memory.opened()
    where.saver, where.store = opened.saver, opened.store
    thread_id = where.thread_id = opts.memory.thread
    where.resource_id = opts.memory.resource
    config["configurable"] = {"thread_id": thread_id}
    if opts.memory.checkpoint is not None:  # a fork: refused before anything is written
        error = await checkpoint_error(where.saver, thread_id, opts.memory.checkpoint)
        if error is not None:
            raise ValueError(error)
    # the thread's owner is ours to say: a caller's metadata cannot claim another's
    config["metadata"] = {**config.get("metadata", {}), "resource_id": where.resource_id or ""}
    where.durable = not isinstance(where.saver, InMemorySaver)
    if where.durable:
        if opts.request_context is not None:
            check_json({k: v for k, v in opts.request_context.to_dict().items() if k not in RUN_IDENTITY_KEYS}, "generate()")
        # each step is saved before the next starts, so the step that dispatches a
        # tool or a delegation is on disk before its side effects begin (SPEC §19)
        where.durability = "sync"
    if where.lease is None:
        where.lease = ThreadLease(opened.leases, thread_id, stoppable=True)
        # double texting (SPEC §29): follow-up runs of background outcomes never wait
        await take_thread(where.lease, "reject" if notices_only else opts.on_busy, opts.abort_signal)
    # the saver refuses this run's writes once its lease is no longer its own (issue 46)
    config["configurable"][FENCE_KEY] = where.lease
