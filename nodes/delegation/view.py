"""What a subagent sees of its parent's conversation (SPEC §6.4, §8): the model view of the
parent's messages and the `message_filter` hook that may narrow them.

The filter runs inside the subagent node, not on the delegation edge: it shapes the
subagent's model context, which is rebuilt whenever that node runs, also on resume.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from supervisor_graph.nodes.delegation.hooks import HookFailed, record_hook_error
from supervisor_graph.nodes.options import RunHandle, RunOptions
from supervisor_graph.nodes.spec import maybe_await
from supervisor_graph.nodes.text import text_of
from supervisor_graph.nodes.turn.prefix_cache import PrefixCache

__all__ = ["apply_message_filter", "model_view"]


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
