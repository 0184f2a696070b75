"""Storage a declaration names: `Memory` (threads, working memory, background records),
the thread lease, and stored agent versions.

Imports point down only: declaration, nodes, checkpointers."""

from supervisor_graph.checkpointers.postgres import PoolOptions

__all__ = ["PoolOptions"]
