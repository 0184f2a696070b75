"""Thread naming that isolates memory.

A delegation's thread is the subgraph namespace LangGraph stores the subagent's
checkpoints under, inside the parent's thread. Its public id joins the two with `::`,
which no namespace contains (subagent keys match `^[A-Za-z0-9_-]{1,56}$` and task ids
are hex), so the id stays parseable whatever the parent thread id holds.
"""

from __future__ import annotations

import re

__all__ = ["NS_JOIN", "delegation_thread_id", "split_thread_id", "stable_namespace", "subagent_resource_id"]

NS_JOIN = "::"
_NS = re.compile(r"^[A-Za-z0-9_-]{1,56}(:[A-Za-z0-9_-]+)?(\|[A-Za-z0-9_-]{1,56}(:[A-Za-z0-9_-]+)?)*$")


def delegation_thread_id(thread_id: str | None, checkpoint_ns: str) -> str | None:
    """The deterministic thread id of the delegation stored under `checkpoint_ns`."""
    if thread_id is None:
        return None
    return f"{thread_id}{NS_JOIN}{checkpoint_ns}"


def split_thread_id(thread_id: str) -> tuple[str, str]:
    """`(LangGraph thread_id, checkpoint_ns)` for a thread id from this library."""
    parent, sep, ns = thread_id.rpartition(NS_JOIN)
    if sep and parent and _NS.match(ns):
        return parent, ns
    return thread_id, ""


def stable_namespace(checkpoint_ns: str) -> str:
    """The namespace without task ids: one per subagent node and parent thread."""
    return "|".join(part.split(":")[0] for part in checkpoint_ns.split("|"))


def subagent_resource_id(parent_resource: str | None, key: str) -> str:
    """Resource of a subagent's threads: stable across delegations of one parent resource."""
    return f"{parent_resource or 'default'}/{key}"
