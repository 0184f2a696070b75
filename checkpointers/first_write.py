"""Writing a delegation's thread for the first time without reading it first.

`update_state` reads a namespace's latest checkpoint before it writes the next one, and
takes a writer run and two config merges to do it. A delegation run inside its parent's
node writes its thread once, when it ends, in a namespace named after its task, which no
run has used before (a re-run of the task after a pause or a crash reads the thread
itself, and writes through `update_state`). That first write reads nothing: it makes the
checkpoint `update_state` would (`compat.write_first_state`) and hands it to the saver.
On sqlite it is stored with the node's own writes, in one transaction
(`SqliteCheckpointer.aput_with_next_write`), instead of a trip of its own.
"""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig

from supervisor_graph.checkpointers.compat import checkpointer_of, state_write_config, write_first_state

__all__ = ["write_delegation_thread"]


async def write_delegation_thread(
    graph: Any, node_config: RunnableConfig, values: dict[str, Any], as_node: str, *, first: bool
) -> None:
    """Store `values` in the delegation thread `node_config` (a node's config, in the
    delegation's namespace) addresses, as node `as_node` of the subagent's `graph` would.
    The `first` write goes straight to the saver, reading nothing; a later one (a re-run
    found the thread) is `aupdate_state`."""
    saver = checkpointer_of(node_config)
    config = state_write_config(node_config, saver)
    if not first:
        await graph.aupdate_state(config, values, as_node=as_node)
        return
    # sqlite: carried by the node's own writes, so the thread and the delegation's result
    # reach the file together or not at all
    put = getattr(saver, "aput_with_next_write", None) or saver.aput
    await write_first_state(graph, config, values, as_node, put=put)
