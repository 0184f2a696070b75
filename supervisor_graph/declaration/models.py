"""Model strings (`"openai/gpt-5-mini"`) to LangChain chat models."""

from __future__ import annotations

import asyncio
import os
import threading
import weakref
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from pydantic import Field, PrivateAttr

from supervisor_graph.declaration.errors import MissingAPIKeyError

__all__ = [
    "PROVIDERS",
    "OpenAIChatModel",
    "check_credentials",
    "model_strings",
    "parse_model_string",
    "resolve_model_string",
]

PROVIDERS = ("openai",)


def parse_model_string(value: str) -> tuple[str, str]:
    """`("openai", "gpt-5-mini")` from `"openai/gpt-5-mini"` or `"openai:gpt-5-mini"`.

    Raises:
        ValueError: the string has no provider, or names one this library does not know.
    """
    for sep in ("/", ":"):
        provider, found, name = value.partition(sep)
        if found and provider and name:
            break
    else:
        raise ValueError(f"model {value!r} must look like 'openai/<model>' (provider/model)")
    if provider not in PROVIDERS:
        raise ValueError(
            f"model {value!r} names unknown provider {provider!r}; use one of {', '.join(PROVIDERS)} "
            "or pass a LangChain BaseChatModel instance"
        )
    return provider, name


def check_credentials(value: str) -> None:
    """Raise `MissingAPIKeyError` when the model string `value` cannot reach its provider.

    `OPENAI_BASE_URL` points it at any OpenAI-compatible server (vLLM, Ollama, LM
    Studio); such servers often need no key.
    """
    if not os.environ.get("OPENAI_API_KEY") and not os.environ.get("OPENAI_BASE_URL"):
        raise MissingAPIKeyError(
            f"model {value!r} needs OPENAI_API_KEY (or OPENAI_BASE_URL for an OpenAI-compatible "
            "server); set it in the environment, or pass a BaseChatModel such as "
            "supervisor_graph.testing.ScriptedChatModel"
        )


def resolve_model_string(value: str, **kwargs: Any) -> BaseChatModel:
    """The chat model a model string names.

    Raises:
        MissingAPIKeyError: neither `OPENAI_API_KEY` nor `OPENAI_BASE_URL` is set.
    """
    _, name = parse_model_string(value)
    check_credentials(value)
    return OpenAIChatModel(
        model=name,
        settings={
            "api_key": os.environ.get("OPENAI_API_KEY") or "not-needed",
            "base_url": os.environ.get("OPENAI_BASE_URL"),
            # langchain-openai leaves streamed usage off when a base URL is set, and
            # OpenAI-compatible servers send it only when the request asks for it
            "stream_usage": True,
            **kwargs,
        },
    )


def model_strings(agent: Any) -> Iterator[str]:
    """Every model string in an agent tree (what needs provider credentials)."""
    if isinstance(agent.model, str):
        yield agent.model
    compaction = getattr(agent, "compaction", None)  # its summariser (SPEC §25)
    if compaction is not None and isinstance(compaction.model, str):
        yield compaction.model
    for sub in agent.agents.values():
        yield from model_strings(sub)


class OpenAIChatModel(BaseChatModel):
    """`ChatOpenAI` for a model string, usable from any event loop.

    The OpenAI client's HTTP connections belong to the event loop that first used them,
    so `await agent.generate(...)` followed by `agent.generate_sync(...)` (which runs on a
    loop of its own), or `asyncio.run(...)` twice, would fail with "bound to a different
    event loop" / "Event loop is closed". This model keeps one `ChatOpenAI` per loop (and
    one for synchronous calls) and hands every call to the caller's.
    """

    model: str
    settings: dict[str, Any] = Field(default_factory=dict)

    _by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, BaseChatModel] = PrivateAttr(
        default_factory=weakref.WeakKeyDictionary
    )
    _sync: BaseChatModel | None = PrivateAttr(default=None)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def _llm_type(self) -> str:
        return "openai-chat"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model": self.model, "base_url": self.settings.get("base_url")}

    def client(self) -> BaseChatModel:
        """The `ChatOpenAI` of the running event loop (or of synchronous callers)."""
        from langchain_openai import ChatOpenAI

        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        with self._lock:
            if loop is None:
                if self._sync is None:
                    self._sync = ChatOpenAI(model=self.model, **self.settings)
                return self._sync
            chat = self._by_loop.get(loop)
            if chat is None:
                from openai import DefaultAsyncHttpxClient

                # an HTTP client of its own: langchain-openai otherwise shares one cached
                # client between instances, and with it the first loop's connections
                chat = self._by_loop[loop] = ChatOpenAI(
                    model=self.model, http_async_client=DefaultAsyncHttpxClient(), **self.settings
                )
            return chat

    def get_num_tokens_from_messages(self, messages: list[BaseMessage], tools: Sequence[Any] | None = None) -> int:
        return self.client().get_num_tokens_from_messages(messages, tools)  # tiktoken's, for compaction (SPEC §25)

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Runnable[Any, AIMessage]:
        # ChatOpenAI formats the tools (strict schemas, tool_choice); the call itself goes
        # through this model, so it still picks the caller's loop
        formatted = self.client().bind_tools(tools, **kwargs)
        return self.bind(**formatted.kwargs)  # type: ignore[attr-defined,no-any-return]

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        return self.client()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)

    async def _agenerate(
        self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        return await self.client()._agenerate(messages, stop=stop, run_manager=run_manager, **kwargs)

    def _stream(
        self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None, **kwargs: Any
    ) -> Iterator[ChatGenerationChunk]:
        yield from self.client()._stream(messages, stop=stop, run_manager=run_manager, **kwargs)

    async def _astream(
        self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None, **kwargs: Any
    ) -> AsyncIterator[ChatGenerationChunk]:
        async for chunk in self.client()._astream(messages, stop=stop, run_manager=run_manager, **kwargs):
            yield chunk
