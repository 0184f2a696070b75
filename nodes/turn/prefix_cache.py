"""Results of a pass over a conversation, extended instead of recomputed as it grows.

A thread's message list only grows between steps, and within a process the messages
before the new ones are the very same objects from one step and turn to the next (the
channel appends to them, the history cache hands them back). A pass that looks at every
message on every model call (the model input, a subagent's view of its parent, the
reducer's id check) therefore redoes the same work on a longer list each turn, which
makes a long conversation's turns slower as it grows. `PrefixCache` keeps the last
result per conversation with the messages it covered, and gives it back when those
messages are still the start of the list, so the caller only processes the rest.

Whether the cached messages still start the list is one list comparison in C, which
short-cuts on identical objects. Messages stored in a thread are treated as values
(LangGraph's channels and checkpoints assume the same): a caller that changes a stored
message in place instead of writing a replacement could be given a stale result.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Generic, TypeVar

__all__ = ["PrefixCache"]

T = TypeVar("T")


class PrefixCache(Generic[T]):
    """The last value computed for each conversation, keyed by its first message.

    Holds at most `size` conversations (oldest dropped first); the entries keep their
    messages alive, so the bound is also the memory bound. Safe to share between
    threads: a lost race costs a recomputation, never a wrong value.
    """

    def __init__(self, size: int = 128) -> None:
        self._size = size
        self._entries: dict[int, tuple[list[object], T]] = {}

    def get(self, messages: Sequence[object]) -> tuple[int, T] | None:
        """`(n, value)` with `value` the one stored for `messages[:n]`, when those are
        still the first `n` messages; None when nothing stored applies."""
        if not messages:
            return None
        entry = self._entries.get(id(messages[0]))
        if entry is None:
            return None
        covered, value = entry
        n = len(covered)
        if n > len(messages):
            return None
        head = messages[:n]
        if (head if isinstance(head, list) else list(head)) != covered:
            return None
        return n, value

    def covering(self, messages: Sequence[object]) -> tuple[list[object], T] | None:
        """`(covered, value)` when the stored messages are `messages` followed by more:
        a replay of the conversation from an earlier point (the history cache folding
        writes onto an older value) that may end where the stored value does."""
        if not messages:
            return None
        entry = self._entries.get(id(messages[0]))
        if entry is None or len(entry[0]) <= len(messages) or entry[0][: len(messages)] != messages:
            return None
        return entry

    def put(self, messages: Sequence[object], n: int, value: T) -> None:
        """Remember `value` as computed for `messages[:n]` (n >= 1)."""
        if n < 1:
            return
        key = id(messages[0])  # the entry holds messages[0], so its id is not reused meanwhile
        entries = self._entries
        entries.pop(key, None)
        entries[key] = (list(messages[:n]), value)
        while len(entries) > self._size:
            try:
                entries.pop(next(iter(entries)), None)
            except (StopIteration, RuntimeError):  # emptied or resized by another thread
                break
