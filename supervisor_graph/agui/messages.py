"""`RunAgentInput.messages` into the LangChain messages a run adds to its thread.

AG-UI clients send the whole conversation every time. The thread already holds what
earlier runs said, so only what it lacks is new: user, system and assistant messages
by id (the bridge streams an assistant message under its `AIMessage` id), tool results
by the call they answer. Messages attributed to a subagent belong to the subagent's own
thread and are never input. A reasoning message carrying `encrypted_value` is handed to
the model with its assistant message, artefacts included.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from supervisor_graph.agui.content import parts_to_blocks, text_of_parts

__all__ = ["decode_reasoning", "encode_reasoning", "new_messages", "reasoning_message_id"]

_REASONING_PREFIX = "reasoning-"


def reasoning_message_id(message_id: str) -> str:
    """The AG-UI id of the reasoning message that belongs to assistant message `message_id`."""
    return f"{_REASONING_PREFIX}{message_id}"


def encode_reasoning(artifacts: list[dict[str, Any]]) -> str:
    """A provider's reasoning artefacts as one opaque string (`encrypted_value`); the
    streaming position (`index`) is not part of them."""
    kept = [{k: v for k, v in a.items() if k != "index"} for a in artifacts]
    return json.dumps({"v": 1, "artifacts": kept}, separators=(",", ":"), default=str)


def decode_reasoning(value: str | None) -> list[dict[str, Any]]:
    if not value:
        return []
    try:
        decoded = json.loads(value)
    except ValueError:
        return []
    artifacts = decoded.get("artifacts") if isinstance(decoded, dict) else None
    return [a for a in artifacts if isinstance(a, dict)] if isinstance(artifacts, list) else []


def _content(content: Any) -> Any:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return parts_to_blocks(content)


def _assistant(message: Any, reasoning: Any) -> AIMessage:
    calls = []
    for call in message.tool_calls or []:
        try:
            args = json.loads(call.function.arguments or "{}")
        except ValueError:
            args = {}
        calls.append({"name": call.function.name, "args": args if isinstance(args, dict) else {}, "id": call.id, "type": "tool_call"})
    text = message.content or ""
    extra: dict[str, Any] = {}
    content: Any = text
    if reasoning is not None:
        blocks: list[Any] = []
        for artifact in decode_reasoning(reasoning.encrypted_value):
            if set(artifact) == {"additional_kwargs"}:
                extra.update(artifact["additional_kwargs"])
            else:
                blocks.append(artifact)
        if not blocks and not extra and reasoning.content:
            blocks.append({"type": "reasoning", "reasoning": reasoning.content})
        if blocks:
            content = [*blocks, *([{"type": "text", "text": text}] if text else [])]
    return AIMessage(id=message.id, content=content, tool_calls=calls, additional_kwargs=extra)


def new_messages(messages: Sequence[Any], stored: Sequence[BaseMessage]) -> list[BaseMessage]:
    """The messages of `messages` (AG-UI) that thread `stored` does not have yet."""
    known = {m.id for m in stored if m.id}
    answered = {m.tool_call_id for m in stored if isinstance(m, ToolMessage)}
    known_calls = {c["id"] for m in stored if isinstance(m, AIMessage) for c in m.tool_calls}
    reasoning = {m.id: m for m in messages if getattr(m, "role", None) == "reasoning"}
    out: list[BaseMessage] = []
    previous: Any = None
    for message in messages:
        role = getattr(message, "role", None)
        if getattr(message, "subagent_run_id", None) is not None or message.id in known:
            previous = message
            continue
        if role == "user":
            out.append(HumanMessage(id=message.id, content=_content(message.content)))
        elif role in ("system", "developer"):
            out.append(SystemMessage(id=message.id, content=message.content))
        elif role == "assistant":
            ids = [c.id for c in message.tool_calls or []]
            if ids and all(i in known_calls for i in ids):
                continue  # a call this thread already has, under another message id
            paired = reasoning.get(reasoning_message_id(message.id))
            if paired is None and getattr(previous, "role", None) == "reasoning":
                paired = previous
            out.append(_assistant(message, paired))
        elif role == "tool" and message.tool_call_id not in answered:
            content = message.content or message.error or ""
            blocks = _content(content)
            if isinstance(content, list) and all(b.get("type") == "text" for b in blocks):
                blocks = text_of_parts(content)
            out.append(
                ToolMessage(
                    id=message.id,
                    content=blocks,
                    tool_call_id=message.tool_call_id,
                    status="error" if message.error else "success",
                    artifact={"text": text_of_parts(content)} if isinstance(content, list) else None,
                )
            )
        previous = message
    return out
