"""Model fallbacks (SPEC §33): `Agent(model=[primary, fallback, ...])` as one chat model
that asks each model in turn, the next one when a model fails after its retries.

A chat model rather than a step of the turn: the compiler binds an agent's tools to its
model once and every driver (the supervisor node, a leaf's loop, a server, `graph.ainvoke`)
calls what it bound, so a model that binds every member to the tools and tries them in
order works everywhere without the turn knowing, and an agent with one model is not
touched. LangChain's `Runnable.with_fallbacks` binds its members' tools too, but each
member runs as a chat model run of its own that every callback handler sees, so under a
streaming handler a failing member's tokens reach the stream before the next one
answers; its own stream falls back only before the first chunk; and it is no
`BaseChatModel`, which an agent's model and the token counters expect.

Each attempt is called whole, never streamed: a stream's text cannot be taken back once
a caller has it (AG-UI's text events only add), and text held until its attempt ends
would arrive when a whole answer does. So the model has no `_astream`, LangChain calls
its `_agenerate` even under a streaming handler, and the stream receives the answer of
the model that answered, once, with that model's name in its `response_metadata`. An
attempt is seen only by the call's tracers (LangSmith shows each under the call, the
failed ones as errors); stream handlers and the OpenTelemetry handler see the call alone,
so no text of a failed attempt reaches a stream and its usage is counted once.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler, CallbackManager
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.tracers import BaseTracer
from langchain_core.tracers._streaming import _StreamingCallbackHandler, _V2StreamingCallbackHandler
from langgraph.errors import GraphBubbleUp
from langgraph.types import RetryPolicy
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator

from supervisor_graph.declaration.agent_rules import model_retry_policy
from supervisor_graph.declaration.errors import SupervisorGraphError
from supervisor_graph.declaration.models import parse_model_string, resolve_model_string
from supervisor_graph.nodes.errors import retry_delay, unwrapping_retry_on

__all__ = ["AllModelsFailedError", "FallbackChatModel", "FallbackItem", "agent_model"]

log = logging.getLogger("supervisor_graph")

_ITEM = "a model string ('openai/gpt-5-mini'), a LangChain BaseChatModel, or {'model': ..., 'max_retries': n}"


class FallbackItem(BaseModel):
    """One model of a fallback list, and how often it is retried before the next one
    answers (None: as the agent's `retry_policy` says)."""

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    model: str | BaseChatModel
    max_retries: int | None = Field(default=None, ge=0)

    @field_validator("model", mode="before")
    @classmethod
    def _known_provider(cls, value: Any) -> Any:
        if isinstance(value, str):
            parse_model_string(value)
        elif not isinstance(value, BaseChatModel):
            raise ValueError(f"must be a model string or a LangChain BaseChatModel; got {type(value).__name__}")
        return value

    @property
    def name(self) -> str:
        model = self.model
        if isinstance(model, str):
            return model
        return str(getattr(model, "model_name", None) or getattr(model, "model", None) or type(model).__name__)


class AllModelsFailedError(SupervisorGraphError):
    """Every model of an agent's fallback list failed. Its text names the models and the
    types of their errors only (a provider's message may quote secrets); `errors` holds
    each model's last exception, in this process only. The agent's `retry_policy` does
    not retry it: each model was retried already."""

    def __init__(self, errors: Sequence[tuple[str, int, BaseException]] = (), text: str | None = None) -> None:
        self.errors = [(name, error) for name, _, error in errors]
        tried = ", ".join(f"{name} ({type(error).__name__}, {n} attempt{'s' * (n > 1)})" for name, n, error in errors)
        super().__init__(text or f"every model failed: {tried}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), ((), str(self)))  # the errors stay in this process, as `ModelCallError`'s do


class FallbackChatModel(BaseChatModel):
    """The models of `models` tried in order: each is retried `max_retries` times (else
    as `retry_policy` says) on the errors that policy retries, then the next answers.
    Model strings are resolved at their first call. Built by `Agent(model=[...])`; the
    compiler hands it the agent's `retry_policy` (`retrying`)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    models: list[FallbackItem]
    retry_policy: Any = Field(default_factory=model_retry_policy)

    # shared by the copies `bind_tools` and `retrying` make: a string is resolved once
    _resolved: dict[int, BaseChatModel] = PrivateAttr(default_factory=dict)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    # this copy's: the tools and settings it was bound with, and each member bound to them
    _binding: tuple[list[Any], dict[str, Any]] | None = PrivateAttr(default=None)
    _bound: dict[int, Runnable[Any, Any]] = PrivateAttr(default_factory=dict)
    # what becomes of each member once bound (`members_as`: prompt caching's settings)
    _change: Callable[[Runnable[Any, Any]], Runnable[Any, Any]] | None = PrivateAttr(default=None)

    @property
    def _llm_type(self) -> str:
        return "fallback-chat"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"models": [item.name for item in self.models]}

    @property
    def model_strings(self) -> list[str]:
        """The model strings among its models (what needs provider credentials)."""
        return [item.model for item in self.models if isinstance(item.model, str)]

    @property
    def native_structured_output(self) -> bool:
        # the final answer tool, which every model can call, not one provider's strict mode
        return False

    def retrying(self, policy: RetryPolicy | None) -> FallbackChatModel:
        """This model retrying as `policy` says (an agent's `retry_policy`; None: a model
        is retried only when its item gives `max_retries`)."""
        copy = self.model_copy(update={"retry_policy": policy})
        copy._bound = {}
        return copy

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Runnable[Any, Any]:
        # every member is bound at its first call, so a model string is resolved only
        # when it is needed
        copy = self.model_copy()
        copy._binding, copy._bound = (list(tools), kwargs), {}
        return copy

    def members_as(self, change: Callable[[Runnable[Any, Any]], Runnable[Any, Any]]) -> FallbackChatModel:
        """This model, each member bound as it is, then changed by `change`: how a step asks
        each member's provider for what it needs (prompt caching, SPEC §33)."""
        copy = self.model_copy()
        copy._bound, copy._change = {}, change
        return copy

    def member(self, index: int) -> Runnable[Any, Any]:
        """Model `index`, resolved and bound as this model is."""
        bound = self._bound.get(index)
        if bound is None:
            model = self._model(index)
            bound = model if self._binding is None else model.bind_tools(self._binding[0], **self._binding[1])
            bound = self._bound[index] = bound if self._change is None else self._change(bound)
        return bound

    def _model(self, index: int) -> BaseChatModel:
        model = self.models[index].model
        if isinstance(model, BaseChatModel):
            return model
        with self._lock:
            if index not in self._resolved:
                self._resolved[index] = resolve_model_string(model)
            return self._resolved[index]

    def _delay(self, item: FallbackItem, attempt: int, error: Exception) -> float | None:
        """Seconds to wait before model `item` is tried again after its `attempt`-th
        failed with `error`, or None: on to the next model."""
        policy = self.retry_policy or model_retry_policy()
        retries = item.max_retries if item.max_retries is not None else (policy.max_attempts - 1 if self.retry_policy else 0)
        if attempt > retries or not unwrapping_retry_on(policy.retry_on)(error):
            return None
        return retry_delay(policy, attempt)

    def _failed(self, index: int, attempt: int, error: Exception) -> float | None:
        item = self.models[index]
        delay = self._delay(item, attempt, error)
        if delay is None and index + 1 < len(self.models):
            log.warning("model %s failed (%s); trying %s", item.name, type(error).__name__, self.models[index + 1].name)
            log.debug("model %s failed", item.name, exc_info=error)
        return delay

    async def _agenerate(
        self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        config, failures = _attempt_config(run_manager), []
        for index, item in enumerate(self.models):
            attempt = 0
            while True:
                attempt += 1
                try:
                    answer = await self.member(index).ainvoke(messages, config, stop=stop, **kwargs)
                except GraphBubbleUp:
                    raise
                except Exception as exc:
                    if (delay := self._failed(index, attempt, exc)) is None:
                        failures.append((item.name, attempt, exc))
                        break
                    await asyncio.sleep(delay)
                else:
                    return ChatResult(generations=[ChatGeneration(message=answer)])
        raise AllModelsFailedError(failures) from failures[-1][2]

    def _generate(
        self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        config, failures = _attempt_config(run_manager), []
        for index, item in enumerate(self.models):
            attempt = 0
            while True:
                attempt += 1
                try:
                    answer = self.member(index).invoke(messages, config, stop=stop, **kwargs)
                except GraphBubbleUp:
                    raise
                except Exception as exc:
                    if (delay := self._failed(index, attempt, exc)) is None:
                        failures.append((item.name, attempt, exc))
                        break
                    time.sleep(delay)
                else:
                    return ChatResult(generations=[ChatGeneration(message=answer)])
        raise AllModelsFailedError(failures) from failures[-1][2]


def _attempt_config(run_manager: Any) -> RunnableConfig:
    """The config of one attempt: under the call, seen by its tracers only (not by stream
    handlers, which would show a failed attempt's text, nor by the others, which see the
    call's answer). Stream handlers carry LangChain's private markers, which LangGraph
    reads too."""
    if run_manager is None:
        return {"callbacks": []}
    tracers: list[BaseCallbackHandler] = [
        h
        for h in run_manager.inheritable_handlers
        if isinstance(h, BaseTracer) and not isinstance(h, (_StreamingCallbackHandler, _V2StreamingCallbackHandler))
    ]
    manager = CallbackManager(handlers=[], parent_run_id=run_manager.run_id)
    manager.set_handlers(tracers)
    manager.add_tags(run_manager.inheritable_tags)
    manager.add_metadata(run_manager.inheritable_metadata)
    return {"callbacks": manager}


def agent_model(value: Any) -> Any:
    """What `Agent(model=value)` holds: a model string (its provider known), a chat model,
    a callable choosing one per request, or, for a list, a `FallbackChatModel` (a list of
    one plain model is that model).

    Raises:
        ValueError: naming what is wrong: an empty list, an item of the wrong kind, an
            unknown provider.
    """
    if isinstance(value, list | tuple):
        return _fallbacks(value)
    if isinstance(value, str):
        parse_model_string(value)
    elif not (isinstance(value, BaseChatModel) or callable(value)):
        raise ValueError(
            "model must be a 'provider/model' string, a LangChain BaseChatModel, a callable, or a list of models "
            f"to fall back on; got {type(value).__name__}"
        )
    return value


def _fallbacks(value: Sequence[Any]) -> Any:
    if not value:
        raise ValueError("model=[] names no model: give the primary model first, then the ones to fall back on")
    items = [_item(i, item) for i, item in enumerate(value)]
    if len(items) == 1 and items[0].max_retries is None:
        return items[0].model  # nothing to fall back on: the model itself
    return FallbackChatModel(models=items)


def _item(index: int, value: Any) -> FallbackItem:
    if not isinstance(value, str | BaseChatModel | dict):
        raise ValueError(f"model[{index}] is {type(value).__name__}: each item must be {_ITEM}")
    try:
        return FallbackItem.model_validate(value if isinstance(value, dict) else {"model": value})
    except ValidationError as exc:
        named = isinstance(value, dict)  # a plain item's only field is the item itself
        why = "; ".join(
            f"{'.'.join(map(str, e['loc'])) + ': ' if named else ''}{e['msg'].removeprefix('Value error, ')}" for e in exc.errors()
        )
        raise ValueError(f"model[{index}]: {why}") from None
