"""Content parts (AG-UI) and content blocks (LangChain), both directions.

Inbound (user and tool messages): text stays text; inline data becomes a base64 block
with its MIME type; a URL is never fetched: an image URL (an `image/*` MIME type, or an
image part without one) becomes an image-URL block and any other URL a file-URL block,
while a `data:` URI is read as the bytes it holds; a provider file handle becomes a
`file_id` block. Outbound (tool results): a string by default, or the result's blocks
as parts when the client declared protocol 1.0.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

from ag_ui.core import (
    AudioPart,
    ContentPart,
    DataSource,
    DocumentPart,
    FileSource,
    ImagePart,
    TextPart,
    UrlSource,
    VideoPart,
)

__all__ = ["parts_to_blocks", "result_content", "text_of_parts"]

log = logging.getLogger("supervisor_graph.agui")

_PART_BLOCK = {"image": "image", "audio": "audio", "video": "video", "document": "file"}
_BLOCK_PART: dict[str, type[Any]] = {"image": ImagePart, "audio": AudioPart, "video": VideoPart, "file": DocumentPart}


def _data_uri(value: str) -> tuple[str, str] | None:
    """`(mime type, base64 data)` of a base64 `data:` URI."""
    if not value.startswith("data:") or "," not in value:
        return None
    head, data = value[5:].split(",", 1)
    mime, _, encoding = head.partition(";")
    if encoding != "base64":
        return None
    return mime or "application/octet-stream", data


def parts_to_blocks(parts: Sequence[Any]) -> list[dict[str, Any]]:
    """AG-UI content parts as LangChain content blocks (unusable parts are dropped with
    a warning)."""
    blocks: list[dict[str, Any]] = []
    for part in parts:
        kind = getattr(part, "type", None)
        if kind == "text":
            blocks.append({"type": "text", "text": part.text})
            continue
        block_type = _PART_BLOCK.get(str(kind))
        source = getattr(part, "source", None)
        if block_type is None or source is None:
            log.warning("dropping a %s content part the bridge cannot hand to a model", kind)
            continue
        value = getattr(source, "value", None)
        mime = getattr(source, "mime_type", None)
        if source.type == "data":
            if not isinstance(value, str) or not mime:
                log.warning("dropping a %s part whose data source has no string value or MIME type", kind)
                continue
            blocks.append({"type": block_type, "base64": value, "mime_type": mime})
        elif source.type == "url" and isinstance(value, str):
            inline = _data_uri(value)
            if inline is not None:
                blocks.append({"type": block_type, "base64": inline[1], "mime_type": mime or inline[0]})
            elif (mime or "").startswith("image/") or (kind == "image" and not mime):
                blocks.append({"type": "image", "url": value, **({"mime_type": mime} if mime else {})})
            else:
                blocks.append({"type": "file", "url": value, **({"mime_type": mime} if mime else {})})
        elif source.type == "file" and isinstance(value, str):
            blocks.append({"type": "image" if kind == "image" else "file", "file_id": value})
        else:
            log.warning("dropping a %s part with an unusable source", kind)
    return blocks


def text_of_parts(parts: Sequence[Any]) -> str:
    return "".join(part.text for part in parts if getattr(part, "type", None) == "text")


def _block_to_part(block: Any) -> ContentPart | None:
    if isinstance(block, str):
        return TextPart(text=block)
    if not isinstance(block, dict):
        return None
    kind = block.get("type")
    if kind == "text":
        return TextPart(text=str(block.get("text", "")))
    if kind == "image_url":  # the OpenAI chat shape
        url = block.get("image_url", {})
        url = url.get("url") if isinstance(url, dict) else url
        inline = _data_uri(str(url or ""))
        source: Any = DataSource(value=inline[1], mime_type=inline[0]) if inline else UrlSource(value=str(url or ""))
        return ImagePart(source=source)
    part_type = _BLOCK_PART.get(str(kind))
    if part_type is None:
        return None
    mime = block.get("mime_type")
    if block.get("base64") or block.get("data"):
        source = DataSource(value=str(block.get("base64") or block.get("data")), mime_type=mime or "application/octet-stream")
    elif block.get("url"):
        source = UrlSource(value=str(block["url"]), mime_type=mime)
    elif block.get("file_id") or block.get("id"):
        source = FileSource(value=str(block.get("file_id") or block.get("id")), mime_type=mime)
    else:
        return None
    return part_type(source=source)  # type: ignore[no-any-return]


def result_content(content: Any, *, parts: bool) -> str | list[ContentPart]:
    """A tool result for `TOOL_CALL_RESULT`: the text, a JSON string for any other value,
    or content parts (only with `parts=True` and when the result has a non-text block)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        if all(isinstance(b, str) or (isinstance(b, dict) and b.get("type") == "text") for b in content):
            return "".join(b if isinstance(b, str) else str(b.get("text", "")) for b in content)
        if parts:
            converted = [_block_to_part(b) for b in content]
            if all(p is not None for p in converted):
                return [p for p in converted if p is not None]
    return json.dumps(content, default=str)
