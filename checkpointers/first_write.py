"""Writing a delegation's thread for the first time without reading it first.

`update_state` reads a namespace's latest checkpoint before it writes the next one. A
delegation run inside its parent's node writes its thread once, when it ends, in a
namespace named after its task, which no run has used before (a re-run of the task
after a pause or a crash reads the thread itself, and writes through the real saver).
On sqlite that read was one more trip to the database's thread, behind whatever the run
was saving, per delegation. That first write now skips `update_state` altogether
(`compat.write_first_state`), and `FirstWrite` is the saver it goes through: on sqlite
the checkpoint rides with the node's own writes, in one transaction, and any read
through it (a graph method handed it) finds the namespace empty without asking.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)

from supervisor_graph.checkpointers.compat import checkpointer_of, state_write_config, write_first_state

__all__ = ["FirstWrite", "write_delegation_thread"]


class FirstWrite(BaseCheckpointSaver[Any]):
    """A saver for a namespace known to be empty: reads find nothing, writes go to `inner`."""

    def __init__(self, inner: BaseCheckpointSaver[Any]) -> None:
        # not `super().__init__`: its check of the serializer against a runtime Protocol
        # costs ~10 us per delegation, and `inner` already holds a checked one
        self.serde = inner.serde
        self.inner = inner

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return None

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return None

    def list(self, config: RunnableConfig | None, **kwargs: Any) -> Iterator[CheckpointTuple]:
        return iter(())

    async def alist(self, config: RunnableConfig | None, **kwargs: Any) -> AsyncIterator[CheckpointTuple]:
        nothing: tuple[CheckpointTuple, ...] = ()
        for item in nothing:
            yield item

    def put(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, new_versions: ChannelVersions) -> RunnableConfig:
        return self.inner.put(config, checkpoint, metadata, new_versions)

    async def aput(
        self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, new_versions: ChannelVersions
    ) -> RunnableConfig:
        # sqlite: stored with the node's own writes, in one transaction (SqliteCheckpointer)
        with_next = getattr(self.inner, "aput_with_next_write", None)
        if with_next is not None:
            return await with_next(config, checkpoint, metadata, new_versions)  # type: ignore[no-any-return]
        return await self.inner.aput(config, checkpoint, metadata, new_versions)

    def put_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = "") -> None:
        self.inner.put_writes(config, writes, task_id, task_path)

    async def aput_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        await self.inner.aput_writes(config, writes, task_id, task_path)

    def get_next_version(self, current: Any, channel: Any) -> Any:
        return self.inner.get_next_version(current, channel)


async def write_delegation_thread(
    graph: Any, node_config: RunnableConfig, values: dict[str, Any], as_node: str, *, first: bool
) -> None:
    """Store `values` in the delegation thread `node_config` (a node's config, in the
    delegation's namespace) addresses, as node `as_node` of the subagent's `graph` would.
    The `first` write goes straight to the saver, reading nothing; a later one (a re-run
    found the thread) is `aupdate_state`."""
    saver = checkpointer_of(node_config)
    if first:
        await write_first_state(graph, state_write_config(node_config, FirstWrite(saver)), values, as_node)
    else:
        await graph.aupdate_state(state_write_config(node_config, saver), values, as_node=as_node)
