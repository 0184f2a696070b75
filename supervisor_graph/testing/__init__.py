"""Scripted chat models for testing agents offline.

`ScriptedChatModel` is a real LangChain `BaseChatModel`: it supports `bind_tools`,
streams text deltas when LangGraph or a caller streams, and reports usage, so every
part of a compiled supervisor runs exactly as it would on a provider's model.
Imports nothing of `supervisor_graph` (only LangChain), so any test or example can use it.

Example:
    >>> from supervisor_graph.testing import ScriptedChatModel, delegate
    >>> model = ScriptedChatModel(responses=[delegate("research_agent", "Find facts"), "Done."])
    >>> model.invoke("hi").tool_calls[0]["name"]
    'agent-research_agent'
    >>> model.invoke("hi").content
    'Done.'

A *policy* decides from the messages instead of a fixed list, which keeps concurrent
runs deterministic:

    >>> echo = ScriptedChatModel(policy=lambda messages: f"echo: {messages[-1].content}")
    >>> echo.invoke("ping").content
    'echo: ping'
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.messages.ai import UsageMetadata
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import ConfigDict, Field, PrivateAttr

__all__ = [
    "Reply",
    "ScriptExhaustedError",
    "ScriptedChatModel",
    "delegate",
    "tool_call",
]

# One scripted answer: text, a finished AIMessage, one tool call, several tool calls, or
# an exception to raise (to test failure handling).
Reply = str | AIMessage | dict[str, Any] | list[dict[str, Any]] | BaseException
"""One scripted answer: text, a finished AIMessage, one tool call, several tool calls, or an exception to raise."""

_WORDS = re.compile(r"\S+\s*|\s+")


class ScriptExhaustedError(RuntimeError):
    """The scripted model was called more often than it has responses."""


def tool_call(name: str, args: dict[str, Any] | None = None, *, id: str | None = None) -> dict[str, Any]:
    """A tool call for a scripted reply: `tool_call("web_search", {"query": "x"})`."""
    return {"name": name, "args": dict(args or {}), "id": id or f"call_{uuid.uuid4().hex[:16]}", "type": "tool_call"}


def delegate(
    agent_key: str,
    prompt: str,
    *,
    max_steps: int | None = None,
    id: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """A delegation call to the subagent registered under `agent_key` in `agents={...}`."""
    args: dict[str, Any] = {"prompt": prompt, **extra}
    if max_steps is not None:
        args["max_steps"] = max_steps
    return tool_call(f"agent-{agent_key}", args, id=id)


class ScriptedChatModel(BaseChatModel):
    """A chat model that answers from a script or a policy function.

    Args:
        responses: replies used one per call, in order (shared by every binding of
            this instance). Each is text, an `AIMessage`, a `tool_call(...)` dict, a
            list of them (parallel calls), or an exception to raise.
        policy: `policy(messages) -> Reply`, called when `responses` is empty or
            exhausted; it sees the exact messages the model was given.
        latency: seconds to wait per call (`asyncio.sleep` on the async path), to
            simulate a provider.
        input_tokens / output_tokens: usage reported per call.
        finish_reason: the provider finish reason put in `response_metadata`.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    responses: list[Any] = Field(default_factory=list)
    policy: Callable[[list[BaseMessage]], Any] | None = None
    latency: float = 0.0
    input_tokens: int = 10
    output_tokens: int = 5
    finish_reason: str = "stop"
    model_name: str = "scripted"
    provider: str | None = None
    """Reported as `response_metadata["model_provider"]` (usage attribution in AG-UI)."""
    record_calls: bool = True
    """Keep every call's messages in `calls` (turn off for long-running servers)."""
    native_structured_output: bool = False
    """Take an output schema as a provider's native structured output would (`response_format`,
    recorded in `response_formats`; reply with the JSON text) instead of through the
    `final_answer` tool (SPEC §28)."""

    _cursor: int = PrivateAttr(default=0)
    _calls: list[list[BaseMessage]] = PrivateAttr(default_factory=list)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _bound_tool_names: list[str] = PrivateAttr(default_factory=list)
    _call_tools: list[list[dict[str, Any]]] = PrivateAttr(default_factory=list)
    _response_formats: list[Any] = PrivateAttr(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted-chat-model"

    @property
    def calls(self) -> list[list[BaseMessage]]:
        """The messages of every call so far, oldest first."""
        return self._calls

    @property
    def call_tools(self) -> list[list[dict[str, Any]]]:
        """The tool schemas each call was made with (parallel to `calls`)."""
        return self._call_tools

    @property
    def response_formats(self) -> list[Any]:
        """The `response_format` each call was made with (None: none; parallel to `calls`)."""
        return self._response_formats

    @property
    def bound_tool_names(self) -> list[str]:
        """Names of the tools from the most recent `bind_tools` call."""
        return self._bound_tool_names

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[Any, AIMessage]:
        schemas = [convert_to_openai_tool(t) for t in tools]
        self._bound_tool_names = [s["function"]["name"] for s in schemas]
        if tool_choice is not None:
            kwargs["tool_choice"] = tool_choice
        return self.bind(tools=schemas, **kwargs)

    # -- replies -------------------------------------------------------------

    def _next_reply(self, messages: list[BaseMessage], tools: Any = None, response_format: Any = None) -> AIMessage:
        with self._lock:
            if self.record_calls:
                self._calls.append(messages)
                self._call_tools.append(list(tools or []))
                self._response_formats.append(response_format)
            if self._cursor < len(self.responses):
                reply = self.responses[self._cursor]
                self._cursor += 1
            elif self.policy is not None:
                reply = None
            else:
                raise ScriptExhaustedError(
                    f"ScriptedChatModel {self.model_name!r} was called {self._cursor + 1} times "
                    f"but has only {len(self.responses)} scripted responses; add responses or "
                    "pass policy=..."
                )
        if reply is None:
            assert self.policy is not None
            reply = self.policy(messages)
        return self._to_message(reply)

    def _to_message(self, reply: Any) -> AIMessage:
        if isinstance(reply, BaseException):
            raise reply
        usage = UsageMetadata(
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            total_tokens=self.input_tokens + self.output_tokens,
        )
        meta: dict[str, Any] = {"finish_reason": self.finish_reason, "model_name": self.model_name}
        if self.provider:
            meta["model_provider"] = self.provider
        if isinstance(reply, AIMessage):
            update: dict[str, Any] = {"response_metadata": {**meta, **reply.response_metadata}}
            if reply.usage_metadata is None:
                update["usage_metadata"] = usage
            return reply.model_copy(update=update)
        if isinstance(reply, str):
            return AIMessage(content=reply, usage_metadata=usage, response_metadata=meta)
        if isinstance(reply, dict):
            reply = [reply]
        if isinstance(reply, list) and all(isinstance(c, dict) for c in reply):
            calls = [tool_call(c["name"], c.get("args"), id=c.get("id")) for c in reply]
            meta["finish_reason"] = "tool_calls"
            return AIMessage(content="", tool_calls=calls, usage_metadata=usage, response_metadata=meta)
        raise TypeError(
            f"ScriptedChatModel cannot turn {type(reply).__name__} into a reply: use text, an "
            "AIMessage, tool_call(...), a list of tool calls, or an exception"
        )

    # -- BaseChatModel -------------------------------------------------------

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if self.latency:
            time.sleep(self.latency)
        return ChatResult(generations=[ChatGeneration(message=self._next_reply(messages, kwargs.get("tools"), kwargs.get("response_format")))])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if self.latency:
            await asyncio.sleep(self.latency)
        return ChatResult(generations=[ChatGeneration(message=self._next_reply(messages, kwargs.get("tools"), kwargs.get("response_format")))])

    def _chunks(self, message: AIMessage) -> Iterator[ChatGenerationChunk]:
        """The reply as a provider would stream it: text word by word, list content block
        by block (text blocks word by word, a thinking block's signature in a chunk of its
        own, as Anthropic does), then tool calls, usage and metadata in the last chunk."""
        content = message.content
        if isinstance(content, str):
            pieces = _WORDS.findall(content) or [""]
            for piece in pieces[:-1]:
                yield ChatGenerationChunk(message=AIMessageChunk(content=piece, id=message.id))
            last: str | list[Any] = pieces[-1]
        else:
            for index, block in enumerate(content):
                for part in _stream_block(block, index):
                    yield ChatGenerationChunk(message=AIMessageChunk(content=[part], id=message.id))
            last = ""
        tool_chunks = [
            {"name": c["name"], "args": _json(c["args"]), "id": c["id"], "index": i, "type": "tool_call_chunk"}
            for i, c in enumerate(message.tool_calls)
        ]
        yield ChatGenerationChunk(
            message=AIMessageChunk(
                content=last,
                id=message.id,
                tool_call_chunks=tool_chunks,  # type: ignore[arg-type]
                usage_metadata=message.usage_metadata,
                response_metadata=message.response_metadata,
                additional_kwargs=message.additional_kwargs,
                chunk_position="last",
            )
        )

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        if self.latency:
            time.sleep(self.latency)
        for chunk in self._chunks(self._next_reply(messages, kwargs.get("tools"), kwargs.get("response_format"))):
            if run_manager and chunk.text:
                run_manager.on_llm_new_token(chunk.text, chunk=chunk)
            yield chunk

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        if self.latency:
            await asyncio.sleep(self.latency)
        for chunk in self._chunks(self._next_reply(messages, kwargs.get("tools"), kwargs.get("response_format"))):
            if run_manager and chunk.text:
                await run_manager.on_llm_new_token(chunk.text, chunk=chunk)
            yield chunk


def _stream_block(block: Any, index: int) -> Iterator[dict[str, Any]]:
    """The streamed parts of one content block (LangChain merges parts by `index`)."""
    if isinstance(block, str):
        block = {"type": "text", "text": block}
    if block.get("type") == "text":
        for piece in _WORDS.findall(str(block.get("text", ""))) or [""]:
            yield {**block, "text": piece, "index": index}
    elif block.get("type") == "thinking" and "signature" in block:
        yield {**{k: v for k, v in block.items() if k != "signature"}, "index": index}
        yield {"type": "thinking", "thinking": "", "signature": block["signature"], "index": index}
    else:
        yield {**block, "index": index}


def _json(args: dict[str, Any]) -> str:
    import json

    return json.dumps(args)
