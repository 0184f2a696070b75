"""Plain text of a message, whatever shape its content has, and its reasoning artefacts."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

__all__ = ["reasoning_artifacts", "text_of", "text_of_content"]

_REASONING_BLOCKS = ("reasoning", "thinking", "redacted_thinking")
_OPAQUE_KEYS = ("signature", "data", "encrypted_content", "id")


def text_of(message: BaseMessage) -> str:
    return text_of_content(message.content)


def text_of_content(content: Any) -> str:
    """The text of message content: a string, or the text parts of a list of blocks (a
    message as a server sends it, a dict, has its content in the same shapes)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "".join(
        part if isinstance(part, str) else str(part.get("text", ""))
        for part in content
        if isinstance(part, str) or (isinstance(part, dict) and part.get("type") == "text")
    )


def reasoning_artifacts(message: AIMessage) -> list[dict[str, Any]]:
    """The provider's opaque reasoning artefacts in `message`, as plain JSON values: an
    Anthropic thinking block's signature or a redacted block, an OpenAI reasoning item
    (id, encrypted content). A caller that sends the message back to the provider later
    must hand these over unchanged. Empty when there are none."""
    out: list[dict[str, Any]] = []
    if isinstance(message.content, list):
        for part in message.content:
            if isinstance(part, dict) and part.get("type") in _REASONING_BLOCKS and any(k in part for k in _OPAQUE_KEYS):
                out.append(dict(part))
    item = message.additional_kwargs.get("reasoning")
    if isinstance(item, dict) and any(k in item for k in _OPAQUE_KEYS):
        out.append({"additional_kwargs": {"reasoning": dict(item)}})
    return out
