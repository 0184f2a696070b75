"""A per-process cache of `DeltaChannel` history for top-level threads.

Loading a thread whose messages live in a `DeltaChannel` walks the checkpoint chain and
decodes every message stored since the last snapshot (and the snapshot itself), so each
turn of a conversation would decode the whole conversation again: the last turns of a
long conversation would be slower than its first ones.

Stored checkpoints and their writes never change. The cache therefore remembers, for
the checkpoints this process itself stored on a thread it has loaded once (`aput` / `aput_writes` see the values
before they are encoded), their parent and their writes to the delta channels, plus the
history last computed for each thread. Loading the next turn walks only the few
checkpoints written since then, in memory. For a channel whose reducer is registered
(`DELTA_REDUCERS`, filled by the state module that declares the channel), that history
is kept folded into one seed value, the channel's value at that checkpoint, so a load
replays only the writes since the last one instead of the whole conversation. Anything the cache has not seen (another
process, a fork from an old checkpoint) falls back to the saver's own walk, so results
are always those the saver would give.

A thread's first run loads no history, and most threads of a busy server see one run:
a thread is followed only from its first load (its second turn walks the saver's way),
so a single-run thread costs the cache one lookup per write.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, PendingWrite

from supervisor_graph.checkpointers.compat import WRITES_IDX_MAP, DeltaChannelHistory, DeltaSnapshot, is_overwrite

__all__ = ["DELTA_REDUCERS", "DeltaHistoryCache", "with_delta_cache"]

# channel -> the reducer of its `DeltaChannel`, called as the channel's replay calls it:
# `reducer(value, [write values])`. The layer that declares the state registers it (this
# one must not import it); a channel without one keeps its history as writes.
DELTA_REDUCERS: dict[str, Callable[[Any, list[Any]], Any]] = {}


_UNKNOWN = "\x00unknown"  # parent of a checkpoint whose writes arrived before it


@dataclass(slots=True)
class _Node:
    parent: str | None
    # writes to delta channels by LangGraph's replay order (task_path, task_id, idx)
    writes: dict[tuple[str, str, int], PendingWrite] = field(default_factory=dict)
    seeds: dict[str, Any] = field(default_factory=dict)
    history: dict[str, DeltaChannelHistory] | None = None


@dataclass(slots=True)
class _Thread:
    nodes: dict[str, _Node] = field(default_factory=dict)
    size: int = 0


class DeltaHistoryCache:
    """Mixin for a `BaseCheckpointSaver`; see the module docstring."""

    delta_channels: frozenset[str] = frozenset({"messages", "compaction"})  # nodes/state.py, nodes/compaction.py
    delta_cache_writes: int = 200_000  # writes kept in all threads together
    # Integer channel versions instead of the savers' 52-character strings (a counter
    # plus a random suffix), which make up half of every checkpoint. Only for savers that
    # keep versions inside the checkpoint (sqlite, in-memory); Postgres keys blobs by them.
    compact_versions: bool = False

    def get_next_version(self, current: Any, channel: Any) -> Any:
        if self.compact_versions and (current is None or isinstance(current, int)):
            return (current or 0) + 1
        return super().get_next_version(current, channel)  # type: ignore[misc]

    def _sg_threads(self) -> OrderedDict[str, _Thread]:
        threads = self.__dict__.get("_sg_delta_threads")
        if threads is None:
            threads = self.__dict__["_sg_delta_threads"] = OrderedDict()
        return threads  # type: ignore[no-any-return]

    def _sg_thread(self, config: RunnableConfig, *, start: bool = False) -> tuple[str, _Thread] | None:
        """The thread's entry; None for a delegation's namespace (fresh per delegation:
        nothing to reuse) and, unless `start`, for a thread not loaded yet."""
        conf = config.get("configurable") or {}
        if conf.get("checkpoint_ns"):
            return None
        key = str(conf.get("thread_id"))
        threads = self.__dict__.get("_sg_delta_threads")
        if threads is None:
            if not start:
                return None
            threads = self._sg_threads()
        thread = threads.get(key)
        if thread is None:
            if not start:
                return None
            thread = threads[key] = _Thread()
        threads.move_to_end(key)
        return key, thread

    async def aput(self, config: RunnableConfig, checkpoint: Any, metadata: Any, new_versions: Any) -> RunnableConfig:
        # Recorded before the write: with async durability a checkpoint's writes may be
        # stored while the checkpoint itself is still being stored.
        found = self._sg_thread(config)
        if found is not None:
            parent = (config.get("configurable") or {}).get("checkpoint_id")
            values = checkpoint["channel_values"]
            node = found[1].nodes.setdefault(checkpoint["id"], _Node(parent=parent))
            node.parent = parent
            node.seeds = {ch: values[ch] for ch in self.delta_channels if ch in values}
        return await super().aput(config, checkpoint, metadata, new_versions)  # type: ignore[misc,no-any-return]

    async def aput_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        await super().aput_writes(config, writes, task_id, task_path)  # type: ignore[misc]
        found = self._sg_thread(config)
        if found is None:
            return
        checkpoint_id = (config.get("configurable") or {}).get("checkpoint_id")
        if not checkpoint_id:
            return
        node = found[1].nodes.get(checkpoint_id)
        if node is None:
            node = found[1].nodes[checkpoint_id] = _Node(parent=_UNKNOWN)
        for idx, (channel, value) in enumerate(writes):
            if channel in self.delta_channels:
                key = (task_path, task_id, WRITES_IDX_MAP.get(channel, idx))
                if key not in node.writes:  # savers keep the first write of a (task, idx)
                    node.writes[key] = (task_id, channel, value)
                    found[1].size += 1

    async def adelete_thread(self, thread_id: str) -> None:
        self._sg_threads().pop(str(thread_id), None)
        await super().adelete_thread(thread_id)  # type: ignore[misc]

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        found = self._sg_thread(config, start=True) if set(channels) <= self.delta_channels else None
        target_id = (config.get("configurable") or {}).get("checkpoint_id")
        if found is None or not channels or not target_id:
            return await super().aget_delta_channel_history(config=config, channels=channels)  # type: ignore[misc,no-any-return]
        key, thread = found
        node = thread.nodes.get(target_id)
        result = self._walk(thread, node, channels) if node is not None else None
        if result is None:
            result = dict(await super().aget_delta_channel_history(config=config, channels=channels))  # type: ignore[misc]
            if node is None:
                node = thread.nodes[target_id] = _Node(parent=None)
                # writes already stored on the target (a run resumed after a pause)
                tup = await self.aget_tuple(config)  # type: ignore[attr-defined]
                for write in tup.pending_writes if tup is not None else ():
                    if write[1] in self.delta_channels:
                        node.writes[("", "", len(node.writes))] = write  # keep the saver's order
        assert node is not None
        node.history = result = {ch: _fold(ch, h) for ch, h in result.items()}
        self._prune(thread, node)
        self._evict(key)
        return {ch: _copy(h) for ch, h in result.items()}

    def _walk(self, thread: _Thread, target: _Node, channels: Sequence[str]) -> dict[str, DeltaChannelHistory] | None:
        """LangGraph's ancestor walk, over what this process stored: writes of each
        ancestor from the target's parent up, until a known history, a snapshot or the
        root."""
        if target.history is not None:  # computed for these channels? (a reader may know fewer)
            return target.history if all(ch in target.history for ch in channels) else None
        newest_first: list[PendingWrite] = []
        cursor = target.parent
        while cursor is not None:
            node = thread.nodes.get(cursor)
            if node is None or node.parent == _UNKNOWN:
                return None
            newest_first.extend(node.writes[k] for k in sorted(node.writes, reverse=True))
            if node.history is not None:
                return {
                    ch: {**_copy(h), "writes": [*h["writes"], *(w for w in reversed(newest_first) if w[1] == ch)]}
                    for ch, h in node.history.items()
                    if ch in channels
                } if all(ch in node.history for ch in channels) else None
            if any(ch in node.seeds for ch in channels):
                if not all(ch in node.seeds for ch in channels):
                    return None
                return {
                    ch: {"seed": node.seeds[ch], "writes": [w for w in reversed(newest_first) if w[1] == ch]}
                    for ch in channels
                }
            cursor = node.parent
        return {ch: {"writes": [w for w in reversed(newest_first) if w[1] == ch]} for ch in channels}

    def _prune(self, thread: _Thread, node: _Node) -> None:
        """Ancestors of a node with a known history are never walked again."""
        cursor, node.parent = node.parent, None
        while cursor is not None:
            ancestor = thread.nodes.pop(cursor, None)
            if ancestor is None:
                break
            cursor = ancestor.parent
        history = sum(_size(h) for n in thread.nodes.values() if n.history for h in n.history.values())
        thread.size = history + sum(len(n.writes) for n in thread.nodes.values())

    def _evict(self, keep: str) -> None:
        threads = self._sg_threads()
        total = sum(t.size for t in threads.values())
        while total > self.delta_cache_writes and len(threads) > 1:
            key, dropped = threads.popitem(last=False)
            if key == keep:
                threads[key] = dropped
                continue
            total -= dropped.size


def _copy(history: DeltaChannelHistory) -> DeltaChannelHistory:
    out: DeltaChannelHistory = {"writes": list(history["writes"])}
    if "seed" in history:
        seed = history["seed"]
        # the channel may hand its value to a node as is: never let it share the cache's list
        out["seed"] = list(seed) if isinstance(seed, list) else seed
    return out


def _fold(channel: str, history: DeltaChannelHistory) -> DeltaChannelHistory:
    """The history as one seed, the value the channel's replay would compute from it
    (one reducer call over the writes, as `DeltaChannel.replay_writes` makes)."""
    reducer = DELTA_REDUCERS.get(channel)
    writes = history["writes"]
    if reducer is None or not writes or any(is_overwrite(w[2]) for w in writes):
        return history
    seed = history.get("seed")
    base = seed.value if isinstance(seed, DeltaSnapshot) else seed
    return {"seed": reducer([] if base is None else base, [w[2] for w in writes]), "writes": []}


def _size(history: DeltaChannelHistory) -> int:
    """Cache budget units: writes, and the items of a folded seed."""
    seed = history.get("seed")
    return len(history["writes"]) + (len(seed) if isinstance(seed, list) else 0)


def with_delta_cache(cls: type[BaseCheckpointSaver], *, compact_versions: bool = False) -> type[BaseCheckpointSaver]:
    """`cls` with the history cache mixed in (same constructor and class methods)."""
    return type(f"Cached{cls.__name__}", (DeltaHistoryCache, cls), {"compact_versions": compact_versions})
