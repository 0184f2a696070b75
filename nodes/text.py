"""Plain text of a message, whatever shape its content has."""

from __future__ import annotations

from langchain_core.messages import BaseMessage

__all__ = ["text_of"]


def text_of(message: BaseMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(
        part if isinstance(part, str) else str(part.get("text", ""))
        for part in content
        if isinstance(part, str) or part.get("type") == "text"
    )
