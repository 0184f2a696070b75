"""A fake OpenAI-compatible chat server on loopback, for running agents offline.

    python -m supervisor_graph.testing.openai_server --port 8100

then, in another shell:

    OPENAI_BASE_URL=http://127.0.0.1:8100/v1 OPENAI_API_KEY=offline \\
        supervisor-graph demo --model openai/gpt-5-mini

It speaks `/v1/chat/completions` like vLLM, Ollama or LM Studio where it matters:
streamed responses carry usage only when the request sets
`stream_options.include_usage`; non-streamed ones always do. A request with a
`prompt_cache_key` gets `usage.prompt_tokens_details.cached_tokens`: the share of its
prompt (tools, then messages) that starts, byte for byte, like one sent before under
that key. Replies come from
`reply(body) -> str | {"tool": name, "args": {...}}`; the default (`default_reply`)
makes any supervisor delegate once and sum up: a model offered `agent-*` tools calls
the first with the user's text, a subagent answers its prompt, and a turn after a
tool result (or a background task's outcome) reports it. In tests, `with FakeOpenAI(reply) as server:` serves on a free
port from a thread (`server.base_url`, `server.requests`). Needs the `agui` extra
(FastAPI and uvicorn).
"""

import json
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from supervisor_graph.testing.http_server import SeenPrefixes, ThreadedServer, delegate_once, provider_app, serve_main

__all__ = ["USAGE", "FakeOpenAI", "app", "default_reply", "main", "usage_of"]

USAGE = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}

Reply = Callable[[dict[str, Any]], Any]


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content or "")


# the name of the message after the conversation (`nodes/state.py` NOTICE_NAME: a working
# memory's value, a budget notice), spelt here: this module imports nothing of the library
NOTICE_NAME = "supervisor_graph_notice"


def default_reply(body: dict[str, Any]) -> Any:
    """Delegate once, then report: enough for any supervisor to run end to end."""
    messages = body.get("messages") or []
    while messages and messages[-1].get("name") == NOTICE_NAME:
        messages = messages[:-1]  # what the library says for one call, after the conversation
    last = messages[-1] if messages else {}
    tools = (t.get("function", {}).get("name", "") for t in body.get("tools") or [])
    return delegate_once(_text(last), last.get("role") == "tool", tools)


def app(reply: Reply = default_reply, requests: list[dict[str, Any]] | None = None) -> Any:
    """The FastAPI app; every request body is appended to `requests` when given."""
    cache = SeenPrefixes()
    return provider_app("/v1/chat/completions", lambda body, answer: _respond(body, answer, usage_of(body, cache)), reply, requests)


def usage_of(body: dict[str, Any], cache: SeenPrefixes) -> dict[str, Any]:
    """`USAGE`, with the cached share of its prompt when the request names a cache key."""
    key = body.get("prompt_cache_key")
    if not key:
        return USAGE
    blocks = [body.get("tools") or [], *(body.get("messages") or [])]
    read, _ = cache.account(blocks, range(len(blocks)), str(key))  # OpenAI caches every prefix it sees
    return {**USAGE, "prompt_tokens_details": {"cached_tokens": int(USAGE["prompt_tokens"] * read)}}


def _respond(body: dict[str, Any], answer: Any, usage: dict[str, Any] = USAGE) -> Any:
    """`answer` as a chat completion, or its server-sent chunks."""
    from fastapi.responses import JSONResponse, StreamingResponse

    base = {"id": f"chatcmpl-{uuid.uuid4().hex[:12]}", "created": int(time.time()), "model": body["model"]}
    if isinstance(answer, dict):
        call = {
            "id": f"call_{uuid.uuid4().hex[:12]}",
            "type": "function",
            "function": {"name": answer["tool"], "arguments": json.dumps(answer.get("args", {}))},
        }
        message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [call]}
        finish = "tool_calls"
    else:
        message, finish = {"role": "assistant", "content": str(answer)}, "stop"
    if not body.get("stream"):
        return JSONResponse(
            {**base, "object": "chat.completion", "choices": [{"index": 0, "message": message, "finish_reason": finish}], "usage": usage}
        )
    include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
    return StreamingResponse(_sse(base, message, finish, usage if include_usage else None), media_type="text/event-stream")


def _sse(base: dict[str, Any], message: dict[str, Any], finish: str, usage: dict[str, Any] | None) -> Iterator[str]:
    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> str:
        choices = [{"index": 0, "delta": delta, "finish_reason": finish_reason}]
        return "data: " + json.dumps({**base, "object": "chat.completion.chunk", "choices": choices}) + "\n\n"

    yield chunk({"role": "assistant", "content": ""})
    if message.get("tool_calls"):
        yield chunk({"tool_calls": [{"index": 0, **message["tool_calls"][0]}]})
    else:
        for word in str(message["content"]).split(" "):
            yield chunk({"content": word + " "})
    yield chunk({}, finish)
    if usage is not None:  # as real servers do: only when the request asked for it
        yield "data: " + json.dumps({**base, "object": "chat.completion.chunk", "choices": [], "usage": usage}) + "\n\n"
    yield "data: [DONE]\n\n"


class FakeOpenAI(ThreadedServer):
    """The server on a free loopback port, from a background thread, for tests."""

    name = "fake OpenAI server"

    def __init__(self, reply: Reply = default_reply) -> None:
        self.requests: list[dict[str, Any]] = []
        super().__init__(app(reply, self.requests))

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"


def main(argv: list[str] | None = None) -> int:
    return serve_main(argv, prog="python -m supervisor_graph.testing.openai_server", doc=__doc__ or "", port=8100, banner="fake OpenAI-compatible server at http://{host}:{port}/v1 (Ctrl-C stops it)", make_app=app)


if __name__ == "__main__":
    raise SystemExit(main())
