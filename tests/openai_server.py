"""A fake OpenAI-compatible chat server on loopback, behaving like vLLM / Ollama / LM
Studio where it matters to the tests: streamed responses carry usage only when the
request sets `stream_options.include_usage`; non-streamed responses always do.

Replies come from `reply(body) -> str | dict` (a dict `{"tool": name, "args": {...}}` is
a tool call); every request body is kept in `requests`.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse

from tests.agui.conftest import ThreadServer

USAGE = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}


class FakeOpenAI:
    def __init__(self, reply: Callable[[dict[str, Any]], Any]) -> None:
        self.reply = reply
        self.requests: list[dict[str, Any]] = []
        app = FastAPI()
        app.post("/v1/chat/completions")(self._chat)
        self._server = ThreadServer(app)

    @property
    def base_url(self) -> str:
        return f"{self._server.url}/v1"

    def __enter__(self) -> FakeOpenAI:
        self._server.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.__exit__(*exc)

    async def _chat(self, request: Request) -> Any:
        body = await request.json()
        self.requests.append(body)
        reply = self.reply(body)
        base = {"id": f"chatcmpl-{uuid.uuid4().hex[:12]}", "created": int(time.time()), "model": body["model"]}
        if isinstance(reply, dict):
            call = {
                "id": f"call_{uuid.uuid4().hex[:12]}",
                "type": "function",
                "function": {"name": reply["tool"], "arguments": json.dumps(reply.get("args", {}))},
            }
            message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [call]}
            finish = "tool_calls"
        else:
            message, finish = {"role": "assistant", "content": str(reply)}, "stop"
        if not body.get("stream"):
            return JSONResponse(
                {**base, "object": "chat.completion", "choices": [{"index": 0, "message": message, "finish_reason": finish}], "usage": USAGE}
            )
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        return StreamingResponse(self._sse(base, message, finish, include_usage), media_type="text/event-stream")

    def _sse(self, base: dict[str, Any], message: dict[str, Any], finish: str, include_usage: bool) -> Iterator[str]:
        def chunk(delta: dict[str, Any], finish_reason: str | None = None, **extra: Any) -> str:
            choices = [{"index": 0, "delta": delta, "finish_reason": finish_reason}] if delta is not None else []
            return "data: " + json.dumps({**base, "object": "chat.completion.chunk", "choices": choices, **extra}) + "\n\n"

        yield chunk({"role": "assistant", "content": ""})
        if message.get("tool_calls"):
            call = message["tool_calls"][0]
            yield chunk({"tool_calls": [{"index": 0, **call}]})
        else:
            for word in str(message["content"]).split(" "):
                yield chunk({"content": word + " "})
        yield chunk({}, finish)
        if include_usage:  # as real servers do: only when the request asked for it
            yield "data: " + json.dumps({**base, "object": "chat.completion.chunk", "choices": [], "usage": USAGE}) + "\n\n"
        yield "data: [DONE]\n\n"
