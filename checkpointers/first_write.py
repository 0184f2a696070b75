"""Writing a delegation's thread for the first time without reading it first.

`update_state` reads a namespace's latest checkpoint before it writes the next one. A
delegation run inside its parent's node writes its thread once, when it ends, in a
namespace named after its task, which no run has used before (a re-run of the task
after a pause or a crash reads the thread itself, and writes through the real saver).
On sqlite that read was one more trip to the database's thread, behind whatever the run
was saving, per delegation; `FirstWrite` answers it from memory.
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

from supervisor_graph.checkpointers.compat import with_checkpointer

__all__ = ["FirstWrite", "first_write_config"]


class FirstWrite(BaseCheckpointSaver[Any]):
    """A saver for a namespace known to be empty: reads find nothing, writes go to `inner`."""

    def __init__(self, inner: BaseCheckpointSaver[Any]) -> None:
        super().__init__(serde=inner.serde)
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


def first_write_config(config: RunnableConfig, saver: BaseCheckpointSaver[Any]) -> RunnableConfig:
    """`config` whose graph writes a new namespace through `saver` without reading it."""
    return with_checkpointer(config, FirstWrite(saver))
