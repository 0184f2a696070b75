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
- `node_runnable`: a node with both a sync and an async function. `add_node` given a
  coroutine function builds LangGraph's `RunnableCallable` with no sync side, so
  `graph.invoke` fails; the same class with both sides keeps LangGraph's injection of
  `config` / `runtime` by parameter name (a `RunnableLambda` would not inject `runtime`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any, TypeVar

from langchain_core.runnables import RunnableConfig
from langgraph._internal._constants import CONFIG_KEY_CHECKPOINTER, CONFIG_KEY_RESUMING
from langgraph._internal._runnable import RunnableCallable
from langgraph.channels.binop import _get_overwrite
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.base import WRITES_IDX_MAP, DeltaChannelHistory
from langgraph.checkpoint.serde.types import _DeltaSnapshot as DeltaSnapshot
from langgraph.pregel._read import ChannelRead

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
    "is_resuming",
    "namespaced_config",
    "node_runnable",
    "read_channel",
    "with_checkpointer",
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


def checkpointer_of(config: RunnableConfig) -> Any:
    """The checkpointer of the run the current node belongs to (None without one)."""
    return (config.get("configurable") or {}).get(CONFIG_KEY_CHECKPOINTER)


def with_checkpointer(config: RunnableConfig, saver: Any) -> RunnableConfig:
    """`config` whose graph methods (`aupdate_state`, ...) go through `saver`."""
    return {**config, "configurable": {**(config.get("configurable") or {}), CONFIG_KEY_CHECKPOINTER: saver}}


def namespaced_config(config: RunnableConfig, saver: Any) -> RunnableConfig:
    """`config` (with a `checkpoint_ns`) made to address that namespace's own state
    through `saver`, whatever graph reads or writes it."""
    return {**config, "configurable": {**(config.get("configurable") or {}), CONFIG_KEY_CHECKPOINTER: saver}}
