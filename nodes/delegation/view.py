"""What a subagent sees of its parent's conversation (SPEC §6.4, §8, §25): the model view of
the parent's messages, the `message_filter` hook that may narrow them, and the bound on
how much of it a subagent inherits (`InheritContext`).

The filter runs inside the subagent node, not on the delegation edge: it shapes the
subagent's model context, which is rebuilt whenever that node runs, also on resume.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from pydantic import BaseModel, ConfigDict, Field

from supervisor_graph.nodes.delegation.hooks import HookFailed, record_hook_error
from supervisor_graph.nodes.options import RunHandle, RunOptions
from supervisor_graph.nodes.spec import maybe_await
from supervisor_graph.nodes.steps.compaction import SUMMARY_KWARG
from supervisor_graph.nodes.steps.tokens import TokenCounter
from supervisor_graph.nodes.text import text_of
from supervisor_graph.nodes.turn.prefix_cache import PrefixCache

__all__ = ["DEFAULT_INHERIT", "InheritContext", "apply_message_filter", "inherit_bound", "model_view", "within"]


class InheritContext(BaseModel):
    """How much of its parent's conversation a subagent inherits (`Agent(inherit_context=...)`,
    SPEC §25): the newest turns that fit in `max_tokens` (estimated at 4 characters a
    token) and, with `turns`, no more than that many (a turn starts at a user message).
    Both None (`InheritContext()`): the whole conversation."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_tokens: int | None = Field(default=None, ge=1, description="Inherit the newest turns that fit in this many tokens.")
    turns: int | None = Field(default=None, ge=1, description="Inherit at most this many of the newest turns.")


# `inherit_context=True`: a few recent turns, whatever their number: over a long
# conversation a subagent's input then grows by at most this (scripts/prompt_sizes.py)
DEFAULT_INHERIT = InheritContext(max_tokens=1_000)

_QUICK = TokenCounter(None).quick  # 4 characters a token: no tokenizer on the delegation path


def _estimate(message: BaseMessage) -> int:
    return _QUICK(message) + 4  # and what a provider adds per message (its role, delimiters)


def inherit_bound(setting: bool | InheritContext) -> InheritContext | None:
    """The bound `Agent(inherit_context=...)` sets (None: nothing inherited)."""
    if setting is True:
        return DEFAULT_INHERIT
    return setting or None


def within(messages: list[BaseMessage], bound: InheritContext | None) -> list[BaseMessage]:
    """The newest turns of `messages` (a model view) that `bound` lets through, whole
    messages from a user message on; a compaction summary in front (it stands for every
    older turn) is kept while it fits on its own, and counts toward `max_tokens`."""
    if bound is None:
        return []
    limit, turns = bound.max_tokens, bound.turns
    if limit is None and turns is None:
        return messages
    first = 1 if messages and _is_summary(messages[0]) else 0
    head = messages[:first]
    if head and limit is not None:
        cost = _estimate(head[0])
        head, limit = (head, limit - cost) if cost <= limit else ([], limit)
    start = len(messages)
    for i in range(len(messages) - 1, first - 1, -1):
        message = messages[i]
        if limit is not None:
            limit -= _estimate(message)
            if limit < 0:
                break
        if isinstance(message, HumanMessage):
            start = i
            if turns is not None and (turns := turns - 1) == 0:
                break
    if start == first and len(head) == first:
        return messages  # all of it: no copy
    return [*head, *messages[start:]]


def _is_summary(message: Any) -> bool:
    return bool(message.additional_kwargs.get(SUMMARY_KWARG))


# each conversation's view so far: a delegation late in a long conversation then only
# looks at the messages since the previous one
_VIEWS: PrefixCache[list[BaseMessage]] = PrefixCache()


def model_view(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """The parent's conversation as model context for a subagent (SPEC §8): tool calls,
    tool results and empty messages are dropped."""
    hit = _VIEWS.get(messages)
    start, done = hit if hit is not None else (0, [])
    out = [*done, *_view(messages[start:])]
    _VIEWS.put(messages, len(messages), out)
    return list(out)


def _view(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    for message in messages:
        if isinstance(message, ToolMessage):
            continue
        if isinstance(message, AIMessage):
            text = text_of(message)
            if not text:
                continue
            if message.tool_calls:
                message = AIMessage(content=text, id=message.id, name=message.name)
            out.append(message)
        elif message.content:
            out.append(message)
    return out


async def apply_message_filter(
    opts: RunOptions, handle: RunHandle, messages: list[BaseMessage], primitive_id: str, prompt: str, tool_call_id: str
) -> list[BaseMessage]:
    """The parent's messages the subagent receives: `message_filter`'s choice, or all.

    Raises:
        HookFailed: the filter failed and the strategy is `throw`.
    """
    message_filter = opts.delegation.message_filter
    if message_filter is None:
        return messages
    try:
        chosen = await maybe_await(message_filter(messages=list(messages), primitive_id=primitive_id, prompt=prompt))
        if not isinstance(chosen, list) or not all(isinstance(m, BaseMessage) for m in chosen):
            raise TypeError(f"message_filter must return a list of messages, not {type(chosen).__name__}")
        return chosen
    except Exception as exc:  # noqa: BLE001
        failure = HookFailed("message_filter", exc)
        throw = opts.delegation.hook_error_strategy == "throw"
        record_hook_error(handle, failure, primitive_id, tool_call_id, warn=not throw)
        if throw:
            raise failure from exc
        return messages
