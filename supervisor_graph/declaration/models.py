"""Model strings (`"openai/gpt-5-mini"`, `"anthropic/claude-sonnet-4-5"`, any provider of
`declaration/providers.py`) to LangChain chat models."""

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
from langchain_core.runnables import Runnable, RunnableBinding
from pydantic import Field, PrivateAttr

from supervisor_graph.declaration.errors import MissingAPIKeyError
from supervisor_graph.declaration.providers import (
    PROVIDERS,
    build_chat,
    check_package,
    check_provider_credentials,
    provider,
)

__all__ = [
    "PROVIDERS",
    "LoopBoundChatModel",
    "OpenAIChatModel",
    "ProviderChatModel",
    "check_credentials",
    "model_strings",
    "parse_model_string",
    "resolve_model_string",
]

def parse_model_string(value: str) -> tuple[str, str]:
    """`("openai", "gpt-5-mini")` from `"openai/gpt-5-mini"` or `"openai:gpt-5-mini"`.

    The provider is what comes before the first `/` or `:` (so `"ollama:llama3.2:3b"` and
    `"openrouter/anthropic/claude-sonnet-4.5"` keep the rest as the model); `-` in its
    name reads as `_` (`"google-genai/..."`).

    Raises:
        ValueError: the string has no provider, names one this library does not know, or
            one whose integration package is not installed (naming the `pip install` line).
    """
    cuts = [i for i in (value.find("/"), value.find(":")) if i > 0]
    cut = min(cuts) if cuts else -1
    if cut < 0 or cut == len(value) - 1:
        raise ValueError(f"model {value!r} must look like 'openai/<model>' (provider/model)")
    name = value[cut + 1 :]
    provider_name = value[:cut].replace("-", "_").lower()
    if provider_name not in PROVIDERS:
        raise ValueError(
            f"model {value!r} names unknown provider {value[:cut]!r}; use one of {', '.join(PROVIDERS)} "
            "or pass a LangChain BaseChatModel instance"
        )
    check_package(provider(provider_name), value)
    return provider_name, name


def check_credentials(value: str) -> None:
    """Raise `MissingAPIKeyError` when the model string `value` cannot reach its provider.

    The error names the provider's variable (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`,
    `GOOGLE_API_KEY`, ...); providers that need none (`ollama`) pass. A base URL stands in
    for a key: `OPENAI_BASE_URL` points at any OpenAI-compatible server (vLLM, Ollama, LM
    Studio), `ANTHROPIC_BASE_URL` at an Anthropic-compatible one; such servers often need
    no key.
    """
    provider_name, _ = parse_model_string(value)
    if provider_name != "openai":
        check_provider_credentials(provider(provider_name), value)
    elif not os.environ.get("OPENAI_API_KEY") and not os.environ.get("OPENAI_BASE_URL"):
        raise MissingAPIKeyError(
            f"model {value!r} needs OPENAI_API_KEY (or OPENAI_BASE_URL for an OpenAI-compatible "
            "server); set it in the environment, or pass a BaseChatModel such as "
            "supervisor_graph.testing.ScriptedChatModel"
        )


def resolve_model_string(value: str, **kwargs: Any) -> BaseChatModel:
    """The chat model a model string names: an `OpenAIChatModel` for `openai/...`, a
    `ProviderChatModel` for any other provider; `kwargs` go to the integration's class.

    Raises:
        ValueError: an unknown provider, or its integration package is missing.
        MissingAPIKeyError: the provider's credentials are not set.
    """
    provider_name, name = parse_model_string(value)
    check_credentials(value)
    if provider_name != "openai":
        return ProviderChatModel(provider=provider_name, model=name, settings=kwargs)
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
    else:  # a fallback list's (declaration/fallbacks.py), which resolves them at their first call
        yield from getattr(agent.model, "model_strings", ())
    compaction = getattr(agent, "compaction", None)  # its summariser (SPEC §25)
    if compaction is not None and isinstance(compaction.model, str):
        yield compaction.model
    for sub in agent.agents.values():
        yield from model_strings(sub)


class LoopBoundChatModel(BaseChatModel):
    """A provider's chat model usable from any event loop.

    An SDK client's HTTP connections belong to the event loop that first used them, so
    `await agent.generate(...)` followed by `agent.generate_sync(...)` (which runs on a
    loop of its own), or `asyncio.run(...)` twice, would fail with "bound to a different
    event loop" / "Event loop is closed". This model keeps one provider model per loop
    (and one for synchronous calls), each with connections of its own, and hands every
    call to the caller's. Subclasses say how one is built (`new_chat`).
    """

    model: str
    settings: dict[str, Any] = Field(default_factory=dict)

    _by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, BaseChatModel] = PrivateAttr(
        default_factory=weakref.WeakKeyDictionary
    )
    _sync: BaseChatModel | None = PrivateAttr(default=None)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    def new_chat(self, loop_bound: bool) -> BaseChatModel:
        """A new provider model; `loop_bound`: for one event loop, so with connections of its own."""
        raise NotImplementedError

    def client(self) -> BaseChatModel:
        """The provider model of the running event loop (or of synchronous callers)."""
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        with self._lock:
            if loop is None:
                if self._sync is None:
                    self._sync = self.new_chat(False)
                return self._sync
            chat = self._by_loop.get(loop)
            if chat is None:
                chat = self._by_loop[loop] = self.new_chat(True)
            return chat

    def get_num_tokens_from_messages(self, messages: list[BaseMessage], tools: Sequence[Any] | None = None) -> int:
        return self.client().get_num_tokens_from_messages(messages, tools)  # the provider's, for compaction (SPEC §25)

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Runnable[Any, AIMessage]:
        # the provider's model formats the tools (strict schemas, tool_choice); the call
        # itself goes through this model, so it still picks the caller's loop
        formatted = self.client().bind_tools(tools, **kwargs)
        if not isinstance(formatted, RunnableBinding):
            return formatted  # an integration that binds otherwise: its own model, this loop's
        return self.bind(**formatted.kwargs)  # type: ignore[return-value]

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


class OpenAIChatModel(LoopBoundChatModel):
    """`ChatOpenAI` for a model string, usable from any event loop: one `ChatOpenAI` per
    loop, each with an HTTP client of its own (`LoopBoundChatModel`)."""

    @property
    def _llm_type(self) -> str:
        return "openai-chat"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model": self.model, "base_url": self.settings.get("base_url")}

    def new_chat(self, loop_bound: bool) -> BaseChatModel:
        from langchain_openai import ChatOpenAI

        if not loop_bound:
            return ChatOpenAI(model=self.model, **self.settings)
        from openai import DefaultAsyncHttpxClient

        # an HTTP client of its own: langchain-openai otherwise shares one cached
        # client between instances, and with it the first loop's connections
        return ChatOpenAI(model=self.model, http_async_client=DefaultAsyncHttpxClient(), **self.settings)


class ProviderChatModel(LoopBoundChatModel):
    """Any other provider's chat model for a model string (`"anthropic/claude-sonnet-4-5"`),
    usable from any event loop (`LoopBoundChatModel`), with streamed usage asked for where
    the integration has the setting (`stream_usage`)."""

    provider: str

    @property
    def _llm_type(self) -> str:
        return f"{self.provider}-chat"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"provider": self.provider, "model": self.model}

    def new_chat(self, loop_bound: bool) -> BaseChatModel:
        return build_chat(provider(self.provider), self.model, self.settings, loop_bound)
