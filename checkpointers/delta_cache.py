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

The cache is bounded per process (issue 46: a served worker following every thread it
had loaded grew ~20 MB a minute): threads are kept least recently used first, within
`delta_cache_bytes` (an estimate of the memory the kept messages take, about 1.8 KB for
a short decoded message, measured) and `delta_cache_threads`. The budget is checked on
every change, not only on loads: a thread loaded once and then written by this process
alone (its later turns on another worker) ages out like the others.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, PendingWrite

from supervisor_graph.checkpointers.compat import WRITES_IDX_MAP, DeltaChannelHistory, DeltaSnapshot, is_overwrite
from supervisor_graph.checkpointers.fence import hold_fence

__all__ = ["DELTA_REDUCERS", "DeltaHistoryCache", "with_delta_cache"]

# channel -> the reducer of its `DeltaChannel`, called as the channel's replay calls it:
# `reducer(value, [write values])`. The layer that declares the state registers it (this
# one must not import it); a channel without one keeps its history as writes.
DELTA_REDUCERS: dict[str, Callable[[Any, list[Any]], Any]] = {}


_UNKNOWN = "\x00unknown"  # parent of a checkpoint whose writes arrived before it


# Budget units are estimated bytes: a decoded message with short text and a tool call
# takes ~1.8 KB (tracemalloc over 5,000 decoded messages), plus its text; whatever else
# a channel holds, and each node and thread entry, a flat amount.
_MESSAGE_BYTES = 1536
_VALUE_BYTES = 256
_NODE_BYTES = 512
_THREAD_BYTES = 1024


@dataclass(slots=True)
class _Node:
    parent: str | None
    # writes to delta channels by LangGraph's replay order (task_path, task_id, idx)
    writes: dict[tuple[str, str, int], PendingWrite] = field(default_factory=dict)
    seeds: dict[str, Any] = field(default_factory=dict)
    history: dict[str, DeltaChannelHistory] | None = None
    history_size: int = 0  # estimated bytes of `history`
    size: int = _NODE_BYTES  # estimated bytes of the writes, seeds and history held here


@dataclass(slots=True)
class _Thread:
    nodes: dict[str, _Node] = field(default_factory=dict)
    size: int = _THREAD_BYTES  # its nodes' sizes and its own entry


class DeltaHistoryCache:
    """Mixin for a `BaseCheckpointSaver`; see the module docstring."""

    delta_channels: frozenset[str] = frozenset({"messages", "compaction"})  # nodes/state.py, nodes/steps/compaction.py
    delta_cache_bytes: int = 16 * 1024 * 1024  # estimated memory of all threads kept together
    delta_cache_threads: int = 2_000
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
            self.__dict__["_sg_delta_size"] = 0
        return threads  # type: ignore[no-any-return]

    @property
    def delta_cache_size(self) -> int:
        """Estimated bytes the cache holds now (all threads)."""
        return int(self.__dict__.get("_sg_delta_size", 0))

    def _grow(self, thread: _Thread, node: _Node | None, by: int) -> None:
        thread.size += by
        if node is not None:
            node.size += by
        self.__dict__["_sg_delta_size"] = self.delta_cache_size + by

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
            self.__dict__["_sg_delta_size"] = self.delta_cache_size + thread.size
        threads.move_to_end(key)
        return key, thread

    async def aput(self, config: RunnableConfig, checkpoint: Any, metadata: Any, new_versions: Any) -> RunnableConfig:
        await hold_fence(config)  # a run whose lease lapsed writes nothing (checkpointers/fence.py)
        # Recorded before the write: with async durability a checkpoint's writes may be
        # stored while the checkpoint itself is still being stored.
        found = self._sg_thread(config)
        if found is not None:
            key, thread = found
            parent = (config.get("configurable") or {}).get("checkpoint_id")
            values = checkpoint["channel_values"]
            node = thread.nodes.get(checkpoint["id"])
            if node is None:
                node = thread.nodes[checkpoint["id"]] = _Node(parent=parent)
                self._grow(thread, None, node.size)
            node.parent = parent
            node.seeds = {ch: values[ch] for ch in self.delta_channels if ch in values}
            if node.seeds:  # a snapshot: the channel's whole value
                self._grow(thread, node, sum(_bytes(v) for v in node.seeds.values()))
            self._evict(key)
        return await super().aput(config, checkpoint, metadata, new_versions)  # type: ignore[misc,no-any-return]

    async def aput_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        await hold_fence(config)
        await super().aput_writes(config, writes, task_id, task_path)  # type: ignore[misc]
        found = self._sg_thread(config)
        if found is None:
            return
        checkpoint_id = (config.get("configurable") or {}).get("checkpoint_id")
        if not checkpoint_id:
            return
        thread_key, thread = found
        node = thread.nodes.get(checkpoint_id)
        if node is None:
            node = thread.nodes[checkpoint_id] = _Node(parent=_UNKNOWN)
            self._grow(thread, None, node.size)
        added = 0
        for idx, (channel, value) in enumerate(writes):
            if channel in self.delta_channels:
                key = (task_path, task_id, WRITES_IDX_MAP.get(channel, idx))
                if key not in node.writes:  # savers keep the first write of a (task, idx)
                    node.writes[key] = (task_id, channel, value)
                    added += _bytes(value)
        if added:
            self._grow(thread, node, added)
        self._evict(thread_key)

    async def adelete_thread(self, thread_id: str) -> None:
        dropped = self._sg_threads().pop(str(thread_id), None)
        if dropped is not None:
            self.__dict__["_sg_delta_size"] = self.delta_cache_size - dropped.size
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
        walked = self._walk(thread, node, channels) if node is not None else None
        if walked is None:
            result = dict(await super().aget_delta_channel_history(config=config, channels=channels))  # type: ignore[misc]
            # one pass over what the saver has just decoded, far cheaper than decoding it
            size = sum(_history_bytes(h) for h in result.values())
            if node is None:
                node = thread.nodes[target_id] = _Node(parent=None)
                self._grow(thread, None, node.size)
                # writes already stored on the target (a run resumed after a pause)
                tup = await self.aget_tuple(config)  # type: ignore[attr-defined]
                for write in tup.pending_writes if tup is not None else ():
                    if write[1] in self.delta_channels:
                        node.writes[("", "", len(node.writes))] = write  # keep the saver's order
                        self._grow(thread, node, _bytes(write[2]))
        else:
            result, size = walked
        assert node is not None
        node.history = result = {ch: _fold(ch, h) for ch, h in result.items()}
        node.history_size = size
        self._prune(thread, node)
        self._evict(key)
        return {ch: _copy(h) for ch, h in result.items()}

    def _walk(
        self, thread: _Thread, target: _Node, channels: Sequence[str]
    ) -> tuple[dict[str, DeltaChannelHistory], int] | None:
        """LangGraph's ancestor walk, over what this process stored: writes of each
        ancestor from the target's parent up, until a known history, a snapshot or the
        root. With the history, its estimated size (the known part's, plus the writes
        walked: no pass over the conversation)."""
        if target.history is not None:  # computed for these channels? (a reader may know fewer)
            return (target.history, target.history_size) if all(ch in target.history for ch in channels) else None
        newest_first: list[PendingWrite] = []
        walked = 0
        cursor = target.parent
        while cursor is not None:
            node = thread.nodes.get(cursor)
            if node is None or node.parent == _UNKNOWN:
                return None
            mine = [node.writes[k] for k in sorted(node.writes, reverse=True)]
            newest_first.extend(mine)
            walked += sum(_bytes(w[2]) for w in mine if w[1] in channels)
            if node.history is not None:
                if not all(ch in node.history for ch in channels):
                    return None
                return {
                    ch: {**_copy(h), "writes": [*h["writes"], *(w for w in reversed(newest_first) if w[1] == ch)]}
                    for ch, h in node.history.items()
                    if ch in channels
                }, node.history_size + walked
            if any(ch in node.seeds for ch in channels):
                if not all(ch in node.seeds for ch in channels):
                    return None
                return {
                    ch: {"seed": node.seeds[ch], "writes": [w for w in reversed(newest_first) if w[1] == ch]}
                    for ch in channels
                }, sum(_bytes(node.seeds[ch]) for ch in channels) + walked
            cursor = node.parent
        return {ch: {"writes": [w for w in reversed(newest_first) if w[1] == ch]} for ch in channels}, walked

    def _prune(self, thread: _Thread, node: _Node) -> None:
        """Ancestors of a node with a known history are never walked again: they go, and
        the node's size becomes its history's."""
        cursor, node.parent = node.parent, None
        freed = 0
        while cursor is not None:
            ancestor = thread.nodes.pop(cursor, None)
            if ancestor is None:
                break
            freed += ancestor.size
            cursor = ancestor.parent
        # the node now holds its history (earlier nodes' histories went with them) and
        # its own writes; the seeds of a snapshot it was stored with are in the history
        size = _NODE_BYTES + node.history_size + sum(_bytes(w[2]) for w in node.writes.values())
        self._grow(thread, None, size - node.size - freed)
        node.size = size

    def _evict(self, keep: str) -> None:
        """Least recently used threads out until the cache is within its budget (`keep`,
        the thread being used, stays)."""
        threads = self.__dict__.get("_sg_delta_threads")
        if threads is None:
            return
        while (self.delta_cache_size > self.delta_cache_bytes or len(threads) > self.delta_cache_threads) and len(threads) > 1:
            key, dropped = threads.popitem(last=False)
            if key == keep:
                threads[key] = dropped
                continue
            self.__dict__["_sg_delta_size"] = self.delta_cache_size - dropped.size


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


def _bytes(value: Any) -> int:
    """Estimated memory of a channel value or write: messages by their text, the rest flat."""
    if isinstance(value, BaseMessage):
        content = value.content
        if isinstance(content, str):
            return _MESSAGE_BYTES + len(content)
        return _MESSAGE_BYTES + sum(len(part) if isinstance(part, str) else _VALUE_BYTES for part in content)
    if isinstance(value, list | tuple):
        return sum(_bytes(item) for item in value)
    if isinstance(value, DeltaSnapshot):
        return _bytes(value.value)
    return _VALUE_BYTES


def _history_bytes(history: DeltaChannelHistory) -> int:
    return sum(_bytes(w[2]) for w in history["writes"]) + _bytes(history.get("seed"))


def with_delta_cache(cls: type[BaseCheckpointSaver], *, compact_versions: bool = False) -> type[BaseCheckpointSaver]:
    """`cls` with the history cache mixed in (same constructor and class methods)."""
    return type(f"Cached{cls.__name__}", (DeltaHistoryCache, cls), {"compact_versions": compact_versions})
