"""The model call of a turn: the one place an agent's chat model is called, for the
supervisor node and for a leaf subagent's in-node loop alike.

The call is built from the turn's `ModelRequest`: the agent's steps wrap it
(`nodes/steps/protocol.py`), then the model sees the system prompt, the read-only
context and the conversation (`model_input`) and answers whole, or streams through the
streaming output guards. A provider's error becomes `ModelCallError`, whose text keeps
the provider's words out of the checkpoint.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage
from langchain_core.prompt_values import ChatPromptValue
from langchain_core.runnables import RunnableConfig
from langgraph.errors import GraphBubbleUp
from langgraph.types import RetryPolicy

from supervisor_graph.nodes.errors import ModelCallError
from supervisor_graph.nodes.guards.core import GuardError
from supervisor_graph.nodes.guards.stream import quiet, stream_answer
from supervisor_graph.nodes.spec import AgentSpec
from supervisor_graph.nodes.steps.protocol import ModelRequest
from supervisor_graph.nodes.turn.prefix_cache import PrefixCache

__all__ = ["call_model", "model_input"]

log = logging.getLogger("supervisor_graph")


async def call_model(
    spec: AgentSpec,
    request: ModelRequest,
    *,
    quiet_answer: bool = False,
    streamed: bool = False,
    send: bool = False,
    policy: RetryPolicy | None = None,
) -> Any:
    """The agent's answer to `request`, its steps around the call. Whole (`quiet_answer`:
    its tokens not streamed to the caller, for a guard to check first; `policy`: retried
    in place, for a leaf's loop, whose node a retry would run again from its start), or
    `streamed` through the streaming output guards (`send`: what they let through goes
    to the caller as it is decided), then `(message or None, what they decided)`."""

    async def answer(request: ModelRequest) -> Any:
        prompt = model_input(request.system, request.context, request.messages)
        try:
            if streamed:
                chunks = request.model.astream(prompt, quiet(request.config))
                return await stream_answer(spec, chunks, request.config, request.handle, request.emit, send=send)
            config = quiet(request.config) if quiet_answer else request.config
            return await _whole(request.model, prompt, config, policy)
        except (GraphBubbleUp, GuardError):
            raise
        except Exception as exc:  # noqa: BLE001 - provider text must not reach the checkpoint
            log.debug("model call of %r failed", spec.agent_id, exc_info=exc)
            raise ModelCallError(spec.agent_id, exc) from exc

    return await spec.steps.call_model(request, answer)


async def _whole(model: Any, prompt: ChatPromptValue, config: RunnableConfig, policy: RetryPolicy | None) -> Any:
    attempt = 0
    while True:
        attempt += 1
        try:
            return await model.ainvoke(prompt, config)
        except GraphBubbleUp:
            raise
        except Exception as exc:
            if policy is None or attempt >= policy.max_attempts or not _retryable(policy, exc):
                raise
            delay = min(policy.max_interval, policy.initial_interval * policy.backoff_factor ** (attempt - 1))
            await asyncio.sleep(delay + (random.uniform(0, 1) if policy.jitter else 0))


def _retryable(policy: RetryPolicy, exc: Exception) -> bool:
    retry_on = policy.retry_on
    if callable(retry_on) and not isinstance(retry_on, type):
        return bool(retry_on(exc))
    kinds = retry_on if isinstance(retry_on, tuple) else (retry_on,)
    return isinstance(exc, kinds)


# each conversation's model input so far (without system prompt and context), so that a
# model call late in a long conversation only orders the messages since the last call
_INPUTS: PrefixCache[list[BaseMessage]] = PrefixCache()


def model_input(system: str, context: Sequence[BaseMessage], messages: Sequence[BaseMessage]) -> ChatPromptValue:
    """System prompt, read-only context, then the conversation with every parallel
    turn's tool results in the order the model called the tools.

    A prompt value, which chat models take as it is: a list would be converted and
    validated message by message again on every call."""
    hit = _INPUTS.get(messages)
    start, done = hit if hit is not None else (0, [])
    if start < len(messages) and isinstance(messages[start], ToolMessage):
        start, done = 0, []  # another branch of the conversation: a turn may span the cut
    conversation = [*done, *_in_call_order(messages, start)]
    # the cache covers up to the last message that is not a tool result, so that a
    # parallel turn whose results are still arriving is ordered again next time
    cut = len(messages) - 1
    while cut > 0 and isinstance(messages[cut], ToolMessage):
        cut -= 1
    if cut > 0:
        _INPUTS.put(messages, cut, conversation[:cut])
    head: list[BaseMessage] = [SystemMessage(content=system)] if system else []
    return ChatPromptValue.model_construct(messages=[*head, *context, *conversation])


def _in_call_order(messages: Sequence[BaseMessage], start: int) -> list[BaseMessage]:
    """`messages[start:]` with each parallel turn's tool results in call order
    (`messages[start]` is not a tool result)."""
    out: list[BaseMessage] = []
    i, n = start, len(messages)
    while i < n:
        message = messages[i]
        out.append(message)
        i += 1
        if isinstance(message, AIMessage) and len(message.tool_calls) > 1:
            j = i
            while j < n and isinstance(messages[j], ToolMessage):
                j += 1
            if j - i > 1:
                order = {call["id"]: k for k, call in enumerate(message.tool_calls)}
                results = sorted(messages[i:j], key=lambda m: order.get(getattr(m, "tool_call_id", ""), 1 << 30))
                out.extend(results)
                i = j
    return out


