"""Token counts of model inputs (SPEC §25), for compaction (nodes/steps/compaction.py).

A model whose class brings its own counter (`get_num_tokens_from_messages`: tiktoken for
OpenAI, an API call for Anthropic, ...) is asked one message at a time, only once a
cheap upper bound (UTF-8 bytes) says an input might not fit, in a worker thread (some
counters are slow or remote); a model without one, or whose counter fails (a missing
package, no network), is counted at 4 characters a token, for good. The counts of a
conversation are kept (`PrefixCache`), so a model call counts only the messages added
since the previous one.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseLanguageModel
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage

from supervisor_graph.nodes.turn.prefix_cache import PrefixCache

__all__ = ["Tally", "TokenCounter", "counter_for", "exact_tally", "tally"]

log = logging.getLogger("supervisor_graph")


def _chars(message: BaseMessage) -> int:
    """Characters of what a message sends: its text (other content blocks as JSON) and its
    tool calls."""
    content = message.content
    if isinstance(content, str):
        n = len(content)
    else:
        n = sum(
            len(part) if isinstance(part, str)
            else len(str(part.get("text", ""))) if isinstance(part, dict) and part.get("type") == "text"
            else len(json.dumps(part, default=str))
            for part in content
        )  # fmt: skip
    if isinstance(message, AIMessage) and message.tool_calls:  # their arguments as the dict's text: near JSON's, cheaper
        n += sum(len(call["name"]) + len(str(call["args"])) for call in message.tool_calls)
    return n


def _approximate(message: BaseMessage) -> int:
    return (_chars(message) + 3) // 4  # 4 characters a token


def _bound(message: BaseMessage) -> int:
    """At least the message's tokens for a byte-level tokenizer: its UTF-8 bytes (and some)."""
    content = message.content
    if isinstance(content, str) and not (isinstance(message, AIMessage) and message.tool_calls):
        return len(content.encode()) + 8
    return 4 * _chars(message) + 8


class TokenCounter:
    """Counts for one model: its own counter when it has one that works, else 4
    characters a token. `quick` is final when approximate, an upper bound otherwise."""

    __slots__ = ("model", "_texts")

    def __init__(self, model: BaseLanguageModel | None) -> None:
        self.model = model  # None: approximate (never had a counter, or it failed)
        self._texts: dict[str, int] = {}

    @property
    def approximate(self) -> bool:
        return self.model is None

    def quick(self, message: BaseMessage) -> int:
        return _approximate(message) if self.model is None else _bound(message)

    def exact(self, messages: Sequence[BaseMessage]) -> list[int]:
        """The model's counts (blocking: may run a tokenizer or ask the provider)."""
        model = self.model
        if model is not None:
            try:
                return [int(model.get_num_tokens_from_messages([m])) for m in messages]
            except Exception as exc:  # noqa: BLE001 - a counter that cannot count falls back, never fails
                log.debug(
                    "token counter of %s failed; counting 4 characters a token", type(model).__name__, exc_info=exc
                )
                self.model = None
        return [_approximate(m) for m in messages]

    async def text(self, text: str, exact: bool) -> int:
        """Tokens of a system prompt or a summary (exact counts kept per text)."""
        if not text:
            return 0
        if self.model is None:
            return (len(text) + 3) // 4
        if not exact:
            return len(text.encode()) + 8
        known = self._texts.get(text)
        if known is None:
            known = (await asyncio.to_thread(self.exact, [SystemMessage(content=text)]))[0]
            if len(self._texts) >= 256:
                self._texts.clear()
            self._texts[text] = known
        return known


def _has_own_counter(model: Any) -> bool:
    if not isinstance(model, BaseLanguageModel):
        return False
    cls, base = type(model), BaseLanguageModel
    return (
        cls.get_num_tokens_from_messages is not base.get_num_tokens_from_messages
        or cls.get_num_tokens is not base.get_num_tokens
        or cls.get_token_ids is not base.get_token_ids
        or model.custom_get_token_ids is not None
    )


_COUNTERS: dict[int, tuple[Any, TokenCounter]] = {}


def counter_for(model: Any) -> TokenCounter:
    """The counter of `model` (a chat model, or one bound to tools), one per model."""
    chat = getattr(model, "bound", model)
    entry = _COUNTERS.get(id(chat))
    if entry is not None and entry[0] is chat:  # holding the model keeps its id from being reused
        return entry[1]
    counter = TokenCounter(chat if _has_own_counter(chat) else None)
    if len(_COUNTERS) >= 64:
        _COUNTERS.clear()
    _COUNTERS[id(chat)] = (chat, counter)
    return counter


@dataclass(slots=True, frozen=True)
class Tally:
    """Token counts of a list of messages: `counts[:exact]` final, the rest upper bounds."""

    counter: TokenCounter
    counts: list[int]
    exact: int
    total: int

    def after(self, start: int) -> int:
        """Tokens of the messages from `start` on."""
        return self.total - sum(self.counts[:start]) if start > 0 else self.total


# each conversation's counts so far, so that a call only counts the messages since the last
_TALLIES: PrefixCache[Tally] = PrefixCache()


def tally(counter: TokenCounter, messages: Sequence[BaseMessage]) -> Tally:
    """The counts of `messages`: final when the counter is approximate, else upper bounds
    where no exact count was needed yet."""
    if not messages:
        return Tally(counter, [], 0, 0)
    hit = _TALLIES.get(messages)
    if hit is not None and hit[1].counter is counter:
        n, known = hit
        if n == len(messages):
            return known
        more = [counter.quick(m) for m in messages[n:]]
        exact = len(messages) if counter.approximate and known.exact == n else known.exact
        known = Tally(counter, [*known.counts, *more], exact, known.total + sum(more))
    else:
        counts = [counter.quick(m) for m in messages]
        known = Tally(counter, counts, len(counts) if counter.approximate else 0, sum(counts))
    _TALLIES.put(messages, len(messages), known)
    return known


async def exact_tally(known: Tally, messages: Sequence[BaseMessage]) -> Tally:
    """`known` with every count final (the model's counter runs in a worker thread)."""
    if known.exact >= len(known.counts):
        return known
    counter, rest = known.counter, messages[known.exact :]
    final = counter.exact(rest) if counter.approximate else await asyncio.to_thread(counter.exact, rest)
    counts = [*known.counts[: known.exact], *final]
    known = Tally(counter, counts, len(counts), sum(counts))
    _TALLIES.put(messages, len(messages), known)
    return known
