"""The LangGraph surfaces this library needs that have no stable public equivalent.

Everything the library takes from LangGraph beyond its public API comes through this
module, so an upgrade that changes one of them breaks here, in one place, and
`tests/checkpointers/test_compat.py` says which. The tested versions are pinned in
`pyproject.toml` (`langgraph` and `langgraph-checkpoint`, minor versions).

- `read_channel`: a node reached by `Send` gets the `Send` payload, not the graph
  state; reading the parent's messages there (instead of copying them into every
  checkpointed payload) needs Pregel's channel reader, `langgraph.pregel._read`.
- `DeltaChannel` and the checkpointer's delta-history API (`DeltaChannelHistory`,
  `WRITES_IDX_MAP`, and `BaseCheckpointSaver.aget_delta_channel_history`, which the
  history cache in `delta_cache.py` overrides): messages stored as deltas, so storage
  grows linearly with a conversation. LangGraph marks them beta.
- `INTERRUPT_WRITE`: the pending-write channel naming an interrupt.
- `is_overwrite` and `DeltaSnapshot`: how a channel write resets a channel
  (`Overwrite` or its dict form) and the stored snapshot of a `DeltaChannel`, so the
  history cache can fold a replay into a seed exactly as the channel would.
- `on_connection_thread`: one job on an aiosqlite connection's own thread (aiosqlite's
  `Connection._execute` and `_conn`), so the sqlite checkpointer stores or loads a
  checkpoint in one trip instead of three to six (`sqlite.py`).
- `namespaced_config`: writing a delegation's state (its working memory) from outside
  the graph that ran it. A graph's state methods look a namespaced config's subgraph up
  among their own nodes unless the config already names a checkpointer
  (`CONFIG_KEY_CHECKPOINTER`), which makes them act on the namespace directly.
- `is_resuming`: whether a node runs in the first step of a resumed run (after an
  interrupt, a crash or a retry), the flag LangGraph itself hands subgraphs
  (`CONFIG_KEY_RESUMING`) so they continue from their own checkpoint. A subagent run
  inside its delegation's node reads its saved progress only then.
- `is_replaying`: whether that run travels back in time (a run from an earlier
  checkpoint, or after an outside update: `CONFIG_KEY_REPLAY_STATE`, which LangGraph
  sets then only, not on a resumed pause); subgraphs then load the newest checkpoint
  written before the replayed one, whichever branch wrote it. `new_turn_at` starts a
  subgraph from a checkpoint of its own choosing with its input: with the flag left on,
  LangGraph would skip the input and continue that checkpoint.
- `write_first_state`: a delegation's thread written for the first time, straight to
  the saver. `aupdate_state` on a namespace nobody wrote yet makes the same checkpoint
  (`tests/checkpointers/test_compat.py` compares them) through a writer run, two config
  merges and a lookup of what the namespace holds: ~130 us against ~70, paid by every
  delegation (bench/what_was_tried.md). It takes Pregel's own steps of a state update
  (`langgraph.pregel._checkpoint`, `_algo.apply_writes`, `_messages.ensure_message_ids`).
- `node_runnable`: a node with both a sync and an async function. `add_node` given a
  coroutine function builds LangGraph's `RunnableCallable` with no sync side, so
  `graph.invoke` fails; the same class with both sides keeps LangGraph's injection of
  `config` / `runtime` by parameter name (a `RunnableLambda` would not inject `runtime`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from langchain_core.runnables import RunnableConfig
from langgraph._internal._constants import (
    CONFIG_KEY_CHECKPOINTER,
    CONFIG_KEY_REPLAY_STATE,
    CONFIG_KEY_RESUMING,
    INTERRUPT,
)
from langgraph._internal._runnable import RunnableCallable
from langgraph.channels.binop import _get_overwrite
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.base import WRITES_IDX_MAP, DeltaChannelHistory
from langgraph.checkpoint.serde.types import _DeltaSnapshot as DeltaSnapshot
from langgraph.pregel._algo import PregelTaskWrites, apply_writes
from langgraph.pregel._checkpoint import (
    channels_from_checkpoint,
    create_checkpoint,
    create_checkpoint_plan_for_update_state_api,
    empty_checkpoint,
)
from langgraph.pregel._messages import ensure_message_ids
from langgraph.pregel._read import ChannelRead
from langgraph.pregel._utils import get_new_channel_versions

__all__ = [
    "INTERRUPT_WRITE",
    "DeltaSnapshot",
    "is_overwrite",
    "on_connection_thread",
    "WRITES_IDX_MAP",
    "DeltaChannel",
    "DeltaChannelHistory",
    "checkpointer_of",
    "has_checkpointer",
    "is_replaying",
    "is_resuming",
    "namespaced_config",
    "new_turn_at",
    "state_write_config",
    "write_first_state",
    "node_runnable",
    "read_channel",
]

# The channel of a pending write that records an interrupt (a cheap "is anything pending?"
# test on a checkpoint tuple, before reading the whole state).
INTERRUPT_WRITE = "__interrupt__"

T = TypeVar("T")


def node_runnable(name: str, func: Callable[..., Any], afunc: Callable[..., Any]) -> Any:
    """A graph node running `func` under sync drivers and `afunc` under async ones."""
    return RunnableCallable(func, afunc, name=name, trace=False)


def is_overwrite(value: Any) -> bool:
    """Whether a channel write replaces the channel's value instead of reducing into it."""
    return bool(_get_overwrite(value)[0])


async def on_connection_thread(conn: Any, fn: Callable[..., T], *args: Any) -> T:
    """`fn(sqlite3_connection, *args)` as one job on aiosqlite connection `conn`'s thread,
    in order with the connection's other statements."""

    def job() -> T:
        raw: sqlite3.Connection = conn._conn
        return fn(raw, *args)

    return await conn._execute(job)  # type: ignore[no-any-return]


def read_channel(config: RunnableConfig, channel: str) -> Any:
    """The committed value of `channel` in the graph running the current node (no copy)."""
    return ChannelRead.do_read(config, select=channel, fresh=False)


def has_checkpointer(config: RunnableConfig) -> bool:
    """True inside a run that has a checkpointer (its nodes' configs carry it)."""
    return (config.get("configurable") or {}).get(CONFIG_KEY_CHECKPOINTER) is not None


def is_resuming(config: RunnableConfig) -> bool:
    """True when this node may be a re-run of one that stopped (see the module docstring)."""
    return bool((config.get("configurable") or {}).get(CONFIG_KEY_RESUMING))


def is_replaying(config: RunnableConfig) -> bool:
    """True in a run from an earlier checkpoint or after an outside update, where
    `is_resuming` holds too (see the module docstring)."""
    return (config.get("configurable") or {}).get(CONFIG_KEY_REPLAY_STATE) is not None


def new_turn_at(configurable: dict[str, Any], checkpoint_id: str) -> dict[str, Any]:
    """A subgraph's `configurable` for a run that takes its input as a new turn from its
    checkpoint `checkpoint_id`, even inside a resumed or replayed parent run."""
    return {**configurable, "checkpoint_id": checkpoint_id, CONFIG_KEY_RESUMING: False}


def checkpointer_of(config: RunnableConfig) -> Any:
    """The checkpointer of the run the current node belongs to (None without one)."""
    return (config.get("configurable") or {}).get(CONFIG_KEY_CHECKPOINTER)


def state_write_config(config: RunnableConfig, saver: Any) -> RunnableConfig:
    """The part of a node's `config` that a state write (`aupdate_state`) through `saver`
    reads: the thread's coordinates and the caller's configurable values (both end up in
    the checkpoint's metadata, with `metadata`), without Pregel's private `__` keys.
    A node's config holds a dozen of those, and `aupdate_state` merges and copies its
    config twice: with them, a delegation's one write cost ~0.1 ms more."""
    configurable = {k: v for k, v in (config.get("configurable") or {}).items() if not k.startswith("__")}
    configurable[CONFIG_KEY_CHECKPOINTER] = saver
    slim: RunnableConfig = {"configurable": configurable}
    if metadata := config.get("metadata"):
        slim["metadata"] = metadata
    return slim


def namespaced_config(config: RunnableConfig, saver: Any) -> RunnableConfig:
    """`config` (with a `checkpoint_ns`) made to address that namespace's own state
    through `saver`, whatever graph reads or writes it."""
    return {**config, "configurable": {**(config.get("configurable") or {}), CONFIG_KEY_CHECKPOINTER: saver}}


async def write_first_state(
    graph: Any,
    config: RunnableConfig,
    values: dict[str, Any],
    as_node: str,
    *,
    put: Callable[..., Awaitable[Any]] | None = None,
) -> None:
    """Store `values` as the first checkpoint of the namespace `config` addresses, as if
    node `as_node` of `graph` had written them: what `graph.aupdate_state(config, values,
    as_node=as_node)` stores there when the namespace holds nothing, reading nothing.
    Goes through the saver `config` names (`state_write_config`), stored by `put` (its
    `aput` unless given); keys that are no channel of `graph` are dropped, as there."""
    saver = config["configurable"][CONFIG_KEY_CHECKPOINTER]
    checkpoint = empty_checkpoint()
    channels, _ = channels_from_checkpoint(graph.channels, checkpoint)
    writes = [(key, value) for key, value in values.items() if key in channels]
    ensure_message_ids(channels, writes)
    task = PregelTaskWrites((INTERRUPT, 0), as_node, writes, [INTERRUPT])
    apply_writes(checkpoint, channels, [task], saver.get_next_version, graph.trigger_to_nodes)
    snapshot, metadata = create_checkpoint_plan_for_update_state_api(
        channels,
        {key for key, _ in writes},
        source="update",
        step=0,
        parents={},
        saved_metadata=None,
        is_fresh_thread=True,
        fork_channels=set(),
        channel_versions=checkpoint["channel_versions"],
    )
    checkpoint = create_checkpoint(
        checkpoint,
        channels,
        0,
        get_next_version=saver.get_next_version if snapshot else None,
        channels_to_snapshot=snapshot,
        stored_versions={},
        trigger_to_nodes=graph.trigger_to_nodes,
    )
    await (put or saver.aput)(config, checkpoint, metadata, get_new_channel_versions({}, checkpoint["channel_versions"]))
