"""An agent's turn, written once for the supervisor node (`supervisor.py`) and a leaf
subagent's in-node loop (`leaf.py`); only what happens after it (routing) differs.

`Turn` holds what a turn knows (the agent's spec, the run's options and handle, the
model and system prompt resolved once) and does what every turn does: decide whether
a limit stops it (`limit`), call the model (`call`, the one place an agent's chat
model is called), make the answer safe and count it (`take`), check it against an
output schema and settle the calls of the steps' own tools (`settle`) and announce it
(`announce`).

The model call is built from the turn's `ModelRequest`: the agent's steps wrap it
(`nodes/steps/protocol.py`), then the model sees the system prompt, the read-only
context, the conversation and what a step says for this call only (`model_input`) and
answers whole, or streams through the
step that reads it as it streams (the streaming output guards). A provider's error becomes `ModelCallError`, whose text keeps
the provider's words out of the checkpoint.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage
from langchain_core.prompt_values import ChatPromptValue
from langchain_core.runnables import RunnableConfig
from langgraph.errors import GraphBubbleUp
from langgraph.types import RetryPolicy

from supervisor_graph.nodes.errors import ModelCallError, retry_delay
from supervisor_graph.nodes.guards.core import GuardError
from supervisor_graph.nodes.guards.stream import quiet
from supervisor_graph.nodes.observability.events import Emitter
from supervisor_graph.nodes.options import RunHandle, RunOptions
from supervisor_graph.nodes.spec import AgentSpec
from supervisor_graph.nodes.state import notice_message
from supervisor_graph.nodes.steps.budget import METERS
from supervisor_graph.nodes.steps.protocol import TURN_STATE, Answered, ModelRequest, Steps
from supervisor_graph.nodes.steps.structured_output import CHECKS, ResponseFormat, StructuredOutput, declared_schema
from supervisor_graph.nodes.steps.usage import step_finish
from supervisor_graph.nodes.turn.prefix_cache import PrefixCache
from supervisor_graph.nodes.turn.routing import error_result

__all__ = ["Turn", "announce", "call_model", "model_input", "repair_calls", "steps_of_run"]


def steps_of_run(spec: AgentSpec, handle: RunHandle, shaped: bool = False) -> Steps:
    """The steps of the agent's turns in this run: those it declares, the answer's check
    when the run gives an output schema the agent does not declare (`shaped`), and the
    budget meters when a budget covers the run (a budget may come with the call, from a
    parent or a hook, so the run, not the compiler, adds them)."""
    steps = spec.steps
    if shaped and steps.find(StructuredOutput) is None:
        steps = steps.plus(CHECKS)
    return steps if handle.budget is None else steps.plus(METERS)


log = logging.getLogger("supervisor_graph")


class Turn:
    """What a turn of `spec` knows and does, whoever routes it: the supervisor node
    (one turn per node run, routed by `Command`) or a leaf's loop (turns in one node,
    its tools run in place). `wrote` collects the state keys the agent's steps write
    (stored with the node's update, or in a leaf's delegation thread)."""

    def __init__(
        self,
        spec: AgentSpec,
        config: RunnableConfig,
        opts: RunOptions,
        handle: RunHandle,
        emit: Emitter,
        wrote: dict[str, Any] | None = None,
        runtime: Any = None,
    ) -> None:
        self.spec, self.config, self.opts, self.handle, self.emit = spec, config, opts, handle, emit
        self.runtime = runtime
        self.request: ModelRequest | None = None  # the last model call's, for `settle`
        self.schema: Any = opts.output_schema or declared_schema(spec)  # the run's, else the agent's (SPEC §28)
        self.wrote: dict[str, Any] = {} if wrote is None else wrote
        self.model: Any = None
        self.system = ""
        self.iteration = 0
        self.steps = steps_of_run(spec, handle, self.schema is not None)

    async def resolve(self, refs: bool = False) -> None:
        """The model bound to the agent's tools (`refs`: delegation tools that take
        result references) and the system prompt, for this run's version and schema."""
        spec, handle = self.spec, self.handle
        self.model = await spec.resolve_model(handle.request_context, refs, handle.override, self.schema)
        self.system = await spec.resolve_instructions(handle.request_context, handle.override)

    def aborted(self) -> bool:
        signal = self.handle.abort_signal
        return signal is not None and signal.is_set()

    def limit(self, stop_at: int | None = None) -> str | None:
        """Why the turn stops before calling the model, if a limit says so: its steps
        (`max_steps`, or the `stop_at` a hook set), or a step (a used-up budget, SPEC §25)."""
        if self.iteration >= self.opts.max_steps or (stop_at is not None and self.iteration >= stop_at):
            return "max_steps" if stop_at is None else "stop"
        return self.steps.stop_reason(self.handle)

    async def call(
        self, history: Sequence[BaseMessage], state: Any, config: RunnableConfig, policy: RetryPolicy | None = None
    ) -> AIMessage | None:
        """The model's answer to `history`, the run's steps around the call (see
        `call_model`): None when a step kept it out of the thread and the model answers
        again (`added` then holds what it answers next)."""
        self.request = request = self._request(history, state, config)
        try:
            return await call_model(self.spec, request, self.steps, policy=policy)  # type: ignore[no-any-return]
        finally:
            self.wrote.update(request.updates)

    @property
    def added(self) -> list[BaseMessage]:
        """What the steps added to the conversation with the last call (`ModelRequest.added`)."""
        return self.request.added if self.request is not None else []

    def take(self, response: Any) -> tuple[AIMessage, list[ToolMessage]]:
        """The answer's tool calls made safe to run, and error results for the calls that
        cannot run (`repair_calls`)."""
        if not isinstance(response, AIMessage):
            raise TypeError(f"Agent {self.spec.agent_id!r}: the model returned {type(response).__name__}, not an AIMessage")
        return repair_calls(response)

    async def settle(self, response: AIMessage, history: Sequence[BaseMessage], state: Any) -> Answered | None:
        """What the steps make of the accepted answer (`Steps.settle`): the calls of their
        own tools answered (working memory, background-task control), the answer checked
        against the run's output schema. `history` and `state` are the call's, for an
        answer this task did not ask for (a leaf's, let through by a person)."""
        request = self.request if self.request is not None else self._request(history, state, self.config)
        # what the answer's tool calls read as the agent's state (`tool_state`): references, no copy
        self.handle.step_state[TURN_STATE] = (request.state, request.messages, len(request.messages), response)
        return await self.steps.settle(request, response)

    def _request(self, history: Sequence[BaseMessage], state: Any, config: RunnableConfig) -> ModelRequest:
        shape = ResponseFormat(self.schema, self.opts.output_retries) if self.schema is not None else None
        handle = self.handle
        return ModelRequest(
            self.model, self.system, history, handle.context_messages, state, config, handle, self.emit,
            runtime=self.runtime, response_format=shape, spec=self.spec, iteration=self.iteration + 1,
        )  # fmt: skip


async def call_model(spec: AgentSpec, request: ModelRequest, steps: Steps, *, policy: RetryPolicy | None = None) -> Any:
    """The agent's answer to `request`, its steps around the call: whole (`policy`:
    retried in place, for a leaf's loop, whose node a retry would run again from its
    start; `request.quiet`: its tokens not streamed to the caller), or streamed through
    the step that reads it as it streams (`request.stream`)."""

    async def answer(request: ModelRequest) -> Any:
        prompt = model_input(request.system, request.context, request.messages, request.tail)
        try:
            if request.stream is not None:
                out = await request.stream(request.model.astream(prompt, quiet(request.config)), request)
                request.answers.append(out[0])
                return out
            config = quiet(request.config) if request.quiet else request.config
            response = await _whole(request.model, prompt, config, policy)
        except (GraphBubbleUp, GuardError):
            raise
        except Exception as exc:  # noqa: BLE001 - provider text must not reach the checkpoint
            log.debug("model call of %r failed", spec.agent_id, exc_info=exc)
            raise ModelCallError(spec.agent_id, exc) from exc
        request.answers.append(response)
        return response

    return await steps.call_model(request, answer)


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
            await asyncio.sleep(retry_delay(policy, attempt))


def _retryable(policy: RetryPolicy, exc: Exception) -> bool:
    retry_on = policy.retry_on
    if callable(retry_on) and not isinstance(retry_on, type):
        return bool(retry_on(exc))
    kinds = retry_on if isinstance(retry_on, tuple) else (retry_on,)
    return isinstance(exc, kinds)


# each conversation's model input so far (without system prompt and context), so that a
# model call late in a long conversation only orders the messages since the last call
_INPUTS: PrefixCache[list[BaseMessage]] = PrefixCache()


def model_input(
    system: str, context: Sequence[BaseMessage], messages: Sequence[BaseMessage], tail: Sequence[str] = ()
) -> ChatPromptValue:
    """System prompt, read-only context, then the conversation with every parallel
    turn's tool results in the order the model called the tools, then `tail`, what steps
    say for this call only, as one user message: nothing that changes from call to call
    comes before the conversation, so each call's input starts with the previous one's.

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
    end: list[BaseMessage] = [notice_message("\n\n".join(tail))] if tail else []  # no run input
    return ChatPromptValue.model_construct(messages=[*head, *context, *conversation, *end])


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


def announce(emit: Emitter, response: AIMessage, step: int, answered: Answered | None = None) -> None:
    """A `tool-call` event for each of the turn's calls, then `step-finish`, then the
    events of the calls steps answered in the turn (`answered`: their marks, such as
    working memory's, tell a client a call is an update, not a tool it shows)."""
    if not emit.active:
        return
    marks = answered.marks if answered is not None else {}
    for call in response.tool_calls:
        payload: dict[str, Any] = {"tool_call_id": call["id"], "tool_name": call["name"], "args": call["args"], "message_id": response.id}
        if marks and (mark := marks.get(call["id"] or "")):
            payload.update(mark)
        emit("tool-call", payload)
    emit("step-finish", step_finish(response, step))
    for kind, event in answered.events if answered is not None else ():
        emit(kind, event)


def repair_calls(ai: AIMessage) -> tuple[AIMessage, list[ToolMessage]]:
    """The turn's tool calls made safe to run, and error results for those that cannot.

    Calls whose arguments were not valid JSON become regular calls with an error
    result, so the model sees what went wrong and the transcript stays well formed.
    Every call gets an id of its own: a model that repeats an id (or gives none) would
    otherwise have two calls answer one id.
    """
    ids = [call["id"] for call in ai.tool_calls]
    if not ai.invalid_tool_calls and all(ids) and len(set(ids)) == len(ids):
        return ai, []  # the common turn: nothing to copy
    calls: list[dict[str, Any]] = [dict(call) for call in ai.tool_calls]
    details: dict[int, str] = {}
    for bad in ai.invalid_tool_calls:
        details[len(calls)] = bad.get("error") or f"arguments were not valid JSON: {json.dumps(bad.get('args'))[:200]}"
        calls.append({"name": bad.get("name") or "unknown", "args": {}, "id": bad.get("id") or "", "type": "tool_call"})
    seen: set[str] = set()
    for call in calls:
        base = call["id"] or f"call_{uuid.uuid4().hex[:24]}"
        call["id"], n = base, 1
        while call["id"] in seen:
            n += 1
            call["id"] = f"{base}-{n}"
        seen.add(call["id"])
    errors = [error_result(calls[i], f"malformed arguments for {calls[i]['name']}: {detail}") for i, detail in details.items()]
    return ai.model_copy(update={"tool_calls": calls, "invalid_tool_calls": []}), errors


