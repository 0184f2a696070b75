"""Thread records read back from any LangGraph checkpointer."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver

from supervisor_graph.checkpointers.naming import NS_JOIN

__all__ = ["ThreadRecord", "list_threads", "OWN_KEYS", "thread_metadata"]

# Metadata keys this library writes on checkpoints (the rest is the caller's); the
# second line names the runs for traces (nodes/observability/tracing.py), and a run's metadata reaches
# its checkpoints too.
OWN_KEYS = frozenset(
    {"resource_id", "agent_id", "parent_thread_id", "delegation_thread_id",
     "agent_name", "agent_path", "tool_call_id", "sub_agent_thread_id", "parent_run_id", "supervisor_graph_tracing"}
)  # fmt: skip
_LANGGRAPH_KEYS = frozenset(
    {"source", "step", "parents", "writes", "thread_id", "checkpoint_ns", "checkpoint_id", "run_id", "run_attempt",
     "graph_id", "assistant_id", "user_id", "counters_since_delta_snapshot", "checkpoint_map"}
)


@dataclass(slots=True)
class ThreadRecord:
    """One conversation thread: a top-level thread or a delegation's thread."""

    thread_id: str
    resource_id: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    parent_thread_id: str | None = None
    agent_id: str | None = None


def _describes_thread(key: str) -> bool:
    return key not in _LANGGRAPH_KEYS and not key.startswith(("langgraph_", "__", "ls_"))


def thread_metadata(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """What a checkpoint's metadata says about its thread (owner, agent, parent, the
    caller's keys), to carry onto a checkpoint written outside a run: the newest
    checkpoint is where the thread's owner is read from (`list_threads`, the AG-UI
    bridge), so a write without it would hand the thread to nobody."""
    return {k: v for k, v in metadata.items() if _describes_thread(k) and isinstance(v, (str, int, float, bool))}


def _record(thread_id: str, ns: str, metadata: Mapping[str, Any]) -> ThreadRecord:
    user = {k: v for k, v in metadata.items() if k not in OWN_KEYS and _describes_thread(k)}
    encoded = user.pop("thread_metadata", None)
    if isinstance(encoded, str):
        try:
            decoded = json.loads(encoded)
        except ValueError:
            decoded = None
        if isinstance(decoded, dict):
            user.update(decoded)
    return ThreadRecord(
        thread_id=f"{thread_id}{NS_JOIN}{ns}" if ns else thread_id,
        resource_id=metadata.get("resource_id") or None,
        metadata=user,
        parent_thread_id=(metadata.get("parent_thread_id") or None) if ns else None,
        agent_id=metadata.get("agent_id") or None,
    )


async def list_threads(saver: BaseCheckpointSaver, filter: Mapping[str, Any] | None = None) -> list[ThreadRecord]:
    """Every thread in `saver`, newest checkpoint's metadata first.

    `filter` may hold `metadata` (each key must match), `resource_id`, `agent_id` and
    `parent_thread_id`.
    """
    wanted = dict(filter or {})
    meta_filter = dict(wanted.pop("metadata", None) or {})
    unknown = set(wanted) - {"resource_id", "agent_id", "parent_thread_id"}
    if unknown:
        raise ValueError(f"list_threads filter: unknown keys {sorted(unknown)}; use metadata, resource_id, agent_id, parent_thread_id")
    seen: dict[tuple[str, str], ThreadRecord] = {}
    async for item in saver.alist(None):
        conf = item.config["configurable"]
        key = (conf["thread_id"], conf.get("checkpoint_ns", ""))
        if key in seen:
            continue
        seen[key] = _record(key[0], key[1], item.metadata or {})
    out = []
    for record in seen.values():
        if any(record.metadata.get(k) != v for k, v in meta_filter.items()):
            continue
        if any(getattr(record, k) != v for k, v in wanted.items()):
            continue
        out.append(record)
    return out
