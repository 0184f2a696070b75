"""Storage of runs without `memory`: one saver and one store per process."""

from __future__ import annotations

from typing import Any

__all__ = ["ephemeral_saver", "ephemeral_store"]

_ephemeral: Any = None
_ephemeral_store: Any = None


def ephemeral_store() -> Any:
    """The process's store for runs without `memory` (its tool-call journal lives as long
    as the process, like their checkpoints)."""
    global _ephemeral_store
    if _ephemeral_store is None:
        from langgraph.store.memory import InMemoryStore

        _ephemeral_store = InMemoryStore()
    return _ephemeral_store


def ephemeral_saver() -> Any:
    """The process's saver for runs without `memory`: they are checkpointed only when
    they pause (durability "exit"), so an approval can still be answered, and their
    thread is deleted when they end."""
    global _ephemeral
    if _ephemeral is None:
        from langgraph.checkpoint.memory import InMemorySaver

        from supervisor_graph.checkpointers.delta_cache import with_delta_cache

        _ephemeral = with_delta_cache(InMemorySaver, compact_versions=True)()
    return _ephemeral
