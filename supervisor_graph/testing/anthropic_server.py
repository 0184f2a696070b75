"""A fake Anthropic Messages API server on loopback, for running agents offline.

    python -m supervisor_graph.testing.anthropic_server --port 8200

then, in another shell:

    ANTHROPIC_BASE_URL=http://127.0.0.1:8200 ANTHROPIC_API_KEY=offline \\
        supervisor-graph demo --model anthropic/claude-sonnet-4-5

It speaks `POST /v1/messages` where it matters: a non-streamed request gets one
`message` JSON; a streamed one (`"stream": true`) gets the server-sent events
`message_start` (input tokens), `content_block_start`, `content_block_delta`
(`text_delta`, or `input_json_delta` pieces of a `tool_use` block's input),
`content_block_stop`, `message_delta` (stop reason and the message's usage) and
`message_stop`. `POST /v1/messages/count_tokens` answers an estimate (4 characters a
token). A request that marks cache breakpoints (`cache_control` on blocks, or at the
top for the last block) gets the usage fields of Anthropic's prompt cache: a prefix up
to a breakpoint the server saw before, byte for byte, is read
(`cache_read_input_tokens`), the rest up to the last breakpoint written
(`cache_creation_input_tokens`), and `input_tokens` counts what is left, so that the
three add up to `USAGE`'s input. Replies come from `reply(body) -> str | {"tool": name, "args": {...}}`; the
default (`default_reply`) makes any supervisor delegate once and sum up, like the fake
OpenAI server's. In tests, `with FakeAnthropic(reply) as server:` serves on a free
port from a thread (`server.base_url`, `server.requests`). Needs the `agui` extra
(FastAPI and uvicorn).
"""

import json
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from supervisor_graph.testing.http_server import SeenPrefixes, ThreadedServer, delegate_once, provider_app, serve_main

__all__ = ["USAGE", "FakeAnthropic", "app", "default_reply", "is_tool_result", "main", "text_of", "usage_of"]

USAGE = {"input_tokens": 11, "output_tokens": 7}

Reply = Callable[[dict[str, Any]], Any]


def text_of(message: dict[str, Any]) -> str:
    """The text of a Messages API message: its string content, or its text and
    tool_result blocks joined."""
    content = message.get("content")
    if not isinstance(content, list):
        return str(content or "")
    parts = []
    for block in content:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "tool_result":
            inner = block.get("content")
            parts.append(text_of({"content": inner}) if isinstance(inner, list) else str(inner or ""))
        elif "text" in block:
            parts.append(str(block["text"]))
    return " ".join(parts)


def is_tool_result(message: dict[str, Any]) -> bool:
    content = message.get("content")
    return isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)


def default_reply(body: dict[str, Any]) -> Any:
    """Delegate once, then report: enough for any supervisor to run end to end."""
    messages = body.get("messages") or []
    last = messages[-1] if messages else {}
    tools = (str(t.get("name", "")) for t in body.get("tools") or [])
    return delegate_once(text_of(last), is_tool_result(last), tools)


def app(reply: Reply = default_reply, requests: list[dict[str, Any]] | None = None) -> Any:
    """The FastAPI app; every request body is appended to `requests` when given."""
    from fastapi import Request
    from fastapi.responses import JSONResponse

    cache = SeenPrefixes()
    api = provider_app("/v1/messages", lambda body, answer: _respond(body, answer, usage_of(body, cache)), reply, requests)
    # (no `from __future__ import annotations` here: FastAPI reads `Request` from the
    # annotation object itself, which a local import leaves out of the module globals)

    @api.post("/v1/messages/count_tokens")
    async def count_tokens(request: Request) -> Any:
        body = await request.json()
        return JSONResponse({"input_tokens": max(1, len(json.dumps(body)) // 4)})

    return api


def usage_of(body: dict[str, Any], cache: SeenPrefixes) -> dict[str, Any]:
    """`USAGE`, split by what the prompt cache read and wrote when the request marks breakpoints."""
    blocks: list[Any] = []
    writes: list[int] = []

    def add(where: str, block: Any) -> None:
        if isinstance(block, dict) and "cache_control" in block:  # a breakpoint: not part of the cached bytes
            writes.append(len(blocks))
            block = {key: value for key, value in block.items() if key != "cache_control"}
        blocks.append([where, block])

    for tool in body.get("tools") or []:  # Anthropic's order: tools, system, messages
        add("tools", tool)
    system = body.get("system")
    for block in [{"type": "text", "text": system}] if isinstance(system, str) else system or []:
        add("system", block)
    for i, message in enumerate(body.get("messages") or []):
        content = message.get("content")
        for block in [{"type": "text", "text": content}] if isinstance(content, str) else content or []:
            add(f"{i}:{message.get('role')}", block)
    if body.get("cache_control") and blocks:  # automatic caching: the last block
        writes.append(len(blocks) - 1)
    if not writes:
        return USAGE
    read, written = cache.account(blocks, writes)
    total = USAGE["input_tokens"]
    hits, writing = int(total * read), int(total * written)
    return {
        **USAGE,
        "input_tokens": total - hits - writing,
        "cache_read_input_tokens": hits,
        "cache_creation_input_tokens": writing,
        "cache_creation": {"ephemeral_5m_input_tokens": writing, "ephemeral_1h_input_tokens": 0},
    }


def _respond(body: dict[str, Any], answer: Any, usage: dict[str, Any] = USAGE) -> Any:
    """`answer` as the Messages API gives it: one message, or its server-sent events."""
    from fastapi.responses import JSONResponse, StreamingResponse

    if isinstance(answer, dict):
        block: dict[str, Any] = {
            "type": "tool_use",
            "id": f"toolu_{uuid.uuid4().hex[:16]}",
            "name": answer["tool"],
            "input": answer.get("args", {}),
        }
        stop = "tool_use"
    else:
        block, stop = {"type": "text", "text": str(answer)}, "end_turn"
    message = {
        "id": f"msg_{uuid.uuid4().hex[:16]}",
        "type": "message",
        "role": "assistant",
        "model": body["model"],
        "content": [block],
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": usage,
    }
    if not body.get("stream"):
        return JSONResponse(message)
    return StreamingResponse(_sse(message), media_type="text/event-stream")


def _event(kind: str, data: dict[str, Any]) -> str:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n"


def _sse(message: dict[str, Any]) -> Iterator[str]:
    # as the real API: message_start carries the input tokens (and one output token),
    # message_delta the cumulative usage of the whole message (input tokens included,
    # which is what langchain-anthropic counts)
    usage = message["usage"]
    start = {**message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
    yield _event("message_start", {"message": start})
    block = message["content"][0]
    if block["type"] == "tool_use":
        yield _event("content_block_start", {"index": 0, "content_block": {**block, "input": {}}})
        arguments = json.dumps(block["input"])
        middle = len(arguments) // 2
        for piece in (arguments[:middle], arguments[middle:]):
            yield _event("content_block_delta", {"index": 0, "delta": {"type": "input_json_delta", "partial_json": piece}})
    else:
        yield _event("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}})
        yield _event("ping", {})
        words = block["text"].split(" ")
        for i, word in enumerate(words):
            text = word if i == len(words) - 1 else word + " "
            yield _event("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": text}})
    yield _event("content_block_stop", {"index": 0})
    delta = {"stop_reason": message["stop_reason"], "stop_sequence": None}
    yield _event("message_delta", {"delta": delta, "usage": usage})
    yield _event("message_stop", {})


class FakeAnthropic(ThreadedServer):
    """The server on a free loopback port, from a background thread, for tests."""

    name = "fake Anthropic server"

    def __init__(self, reply: Reply = default_reply) -> None:
        self.requests: list[dict[str, Any]] = []
        super().__init__(app(reply, self.requests))

    @property
    def base_url(self) -> str:
        """What `ANTHROPIC_BASE_URL` takes (the SDK adds `/v1/messages`)."""
        return f"http://127.0.0.1:{self.port}"


def main(argv: list[str] | None = None) -> int:
    return serve_main(argv, prog="python -m supervisor_graph.testing.anthropic_server", doc=__doc__ or "", port=8200, banner="fake Anthropic Messages API server at http://{host}:{port} (Ctrl-C stops it)", make_app=app)


if __name__ == "__main__":
    raise SystemExit(main())
