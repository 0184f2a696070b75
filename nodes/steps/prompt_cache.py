"""Prompt caching (SPEC §33), on by default where a provider must be asked for it.

- **Anthropic** caches a prompt's prefix only up to a breakpoint the request marks
  (`cache_control`, at most four). The step marks three, in the order Anthropic reads a
  prompt: the last tool's definition (the tools), the end of the agent's own system
  prompt (tools and instructions: what every conversation of the agent starts with, so
  a subagent's next delegation reads it too), and, through langchain-anthropic's
  top-level `cache_control` setting, the last block of the conversation so far
  (Anthropic's automatic caching, which moves that breakpoint forward as the
  conversation grows).
- **OpenAI** caches prefixes by itself; a `prompt_cache_key` routes an agent's requests
  to the machines holding its prefix, so each request carries one per agent path
  (`"boss/research-agent"`).

A cache is read only while the prefix is byte-identical from call to call: `model_input`
(`nodes/turn/turn.py`) puts only what stays before the conversation (the system prompt,
a subagent's read-only context), and what a step appends to the system prompt for one
call (a working-memory section, a budget notice) follows the system breakpoint, which
this step places at the end of the prompt as it saw it: it sits inside the guards and
LangChain's middleware, outside compaction, working memory and budgets.

The step changes the model of the call, once per bound model: a variant bound with the
provider's settings (for Anthropic a `_MarkedSystem`, which also marks the system
message as the prompt reaches it); a model made of others, a fallback list
(`members_as`), gets each member's. The compiler adds the step only to agents whose
model is one of these providers, or a list or callable that may hold one; a model of
another provider handed to it at run time passes through unchanged.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, SystemMessage
from langchain_core.prompt_values import ChatPromptValue
from langchain_core.runnables import RunnableBinding, RunnableConfig
from pydantic import Field

from supervisor_graph.nodes.steps.protocol import ModelHandler, ModelRequest, Step

__all__ = ["BREAKPOINT", "CACHING_PROVIDERS", "PromptCache", "asks", "cache_key", "provider_of"]

# Anthropic's breakpoint, with its default lifetime (five minutes, renewed by each read)
BREAKPOINT: dict[str, str] = {"type": "ephemeral"}

Provider = Literal["anthropic", "openai"]
CACHING_PROVIDERS: frozenset[str] = frozenset({"anthropic", "openai"})

# a chat model's `_llm_type` -> the provider to ask: langchain-anthropic's `ChatAnthropic`
# and langchain-openai's `ChatOpenAI`, and the library's models for "anthropic:..." and
# "openai:..." strings, which say the same; other transports (Bedrock, Vertex, Azure) differ
_LLM_TYPES: dict[str, Provider] = {"anthropic-chat": "anthropic", "openai-chat": "openai"}


def provider_of(model: Any) -> Provider | None:
    """The provider whose prompt cache `model` (a chat model, or one bound to tools)
    must ask for, if any."""
    while isinstance(model, RunnableBinding):
        model = model.bound
    if not isinstance(model, BaseChatModel):
        return None
    try:
        return _LLM_TYPES.get(model._llm_type)
    except Exception:  # noqa: BLE001 - an integration's own property: no caching rather than no call
        return None


def asks(model: Any) -> bool:
    """Whether an agent declaring `model` (not a model string) gets the step: a chat
    model of a provider to ask, or anything resolved per run (a callable), which may
    return one."""
    return provider_of(model) is not None if isinstance(model, BaseChatModel) else True


def cache_key(agent_path: Sequence[str]) -> str:
    """The `prompt_cache_key` of an agent's OpenAI requests: its path from the top agent."""
    return "/".join(agent_path)


class PromptCache(Step):
    """The step that asks the agent's provider to cache its prompt prefix."""

    name = "prompt_cache"

    def __init__(self) -> None:
        # (id(bound model), system prompt, agent path) -> (that model, its variant): one
        # variant per bound model, kept while it lives (holding it keeps its id unused)
        self._variants: dict[tuple[int, str, tuple[str, ...]], tuple[Any, Any]] = {}

    async def awrap_model_call(self, request: ModelRequest, handler: ModelHandler) -> Any:
        model = request.model
        key = (id(model), request.system, request.handle.agent_path)
        entry = self._variants.get(key)
        if entry is None or entry[0] is not model:
            if len(self._variants) >= 64:  # a system prompt made per run: bounded
                self._variants.clear()
            entry = self._variants[key] = (model, variant(model, request.system, request.handle.agent_path))
        cached = entry[1]
        return await handler(request if cached is model else request.override(model=cached))


def variant(model: Any, system: str, agent_path: Sequence[str]) -> Any:
    """`model` bound to ask its provider to cache the prompt's prefix (`system`: the
    agent's system prompt, whose end is Anthropic's second breakpoint); `model` itself
    for a provider that caches without being asked, or not at all."""
    inner: Any = model.bound if isinstance(model, RunnableBinding) else model
    members_as = getattr(inner, "members_as", None)
    if callable(members_as):  # a fallback list: each member asks its own provider
        each = members_as(lambda member: variant(member, system, agent_path))
        return each if inner is model else model.model_copy(update={"bound": each})
    provider = provider_of(model)
    if provider == "openai":
        chat = model.bound if isinstance(model, RunnableBinding) else model
        if "prompt_cache_key" in getattr(model, "kwargs", {}) or "prompt_cache_key" in (getattr(chat, "model_kwargs", None) or {}):
            return model  # a key of the user's own
        return model.bind(prompt_cache_key=cache_key(agent_path))
    if provider == "anthropic":
        return _marked(model, system)
    return model


def _marked(model: Any, system: str) -> _MarkedSystem:
    """An Anthropic `model` with the breakpoints of its tools and conversation bound,
    marking the end of `system` as prompts reach it."""
    fields: dict[str, Any] = {"bound": model}
    if isinstance(model, RunnableBinding):  # bound to the agent's tools: the same binding, one level
        fields = {name: getattr(model, name) for name in RunnableBinding.model_fields if name != "name"}
    kwargs = dict(fields.get("kwargs") or {})
    tools = kwargs.get("tools")
    if tools and isinstance(tools[-1], dict):  # langchain-anthropic formatted them: Anthropic's own dicts
        kwargs["tools"] = [*tools[:-1], {"cache_control": BREAKPOINT, **tools[-1]}]  # a breakpoint of the user's stays
    kwargs.setdefault("cache_control", BREAKPOINT)  # langchain-anthropic's setting: the conversation's last block
    return _MarkedSystem(**{**fields, "kwargs": kwargs}, stable=system)


class _MarkedSystem(RunnableBinding):  # type: ignore[type-arg]
    """A bound Anthropic model whose prompts' system message is sent as content blocks,
    a breakpoint ending `stable` (the agent's system prompt): what a step appended for
    one call (working memory, a budget notice) follows it, in a block of its own. Only
    the calls a turn makes (`ainvoke`, `astream`, and their sync forms) are marked."""

    stable: str = ""
    # the system messages marked, by their text: one made per system prompt, not per call
    memo: dict[str, SystemMessage] = Field(default_factory=dict, exclude=True, repr=False)

    def _prompt(self, prompt: Any) -> Any:
        messages = prompt.messages if isinstance(prompt, ChatPromptValue) else prompt
        if not isinstance(messages, list) or not messages:
            return prompt
        first = messages[0]
        if not isinstance(first, SystemMessage) or not isinstance(first.content, str) or not first.content:
            return prompt
        system = self.memo.get(first.content)
        if system is None:
            if len(self.memo) >= 8:  # a budget notice or a working-memory section changes it now and then
                self.memo.clear()
            system = self.memo[first.content] = SystemMessage(content=_blocks(first.content, self.stable))
        marked: list[BaseMessage] = [system, *messages[1:]]
        return ChatPromptValue.model_construct(messages=marked) if isinstance(prompt, ChatPromptValue) else marked

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        return super().invoke(self._prompt(input), config, **kwargs)

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        return await super().ainvoke(self._prompt(input), config, **kwargs)

    def stream(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Iterator[Any]:
        return super().stream(self._prompt(input), config, **kwargs)

    def astream(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> AsyncIterator[Any]:
        return super().astream(self._prompt(input), config, **kwargs)


def _blocks(text: str, stable: str) -> list[str | dict[str, Any]]:
    """`text` as system content blocks, a breakpoint after its `stable` start."""
    rest = text[len(stable) :] if stable and text.startswith(stable) else ""
    if rest.strip():
        return [{"type": "text", "text": stable, "cache_control": BREAKPOINT}, {"type": "text", "text": rest}]
    return [{"type": "text", "text": text, "cache_control": BREAKPOINT}]
