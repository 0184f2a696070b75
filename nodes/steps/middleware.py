"""LangChain v1 middleware as steps of the turn (SPEC §33): `Agent(middleware=[...])`.

Each `AgentMiddleware` (a subclass, or what LangChain's decorators make) becomes one
`MiddlewareStep`, which uses only the hooks the middleware overrides:

- `wrap_model_call` wraps the turn's model call with LangChain's own `ModelRequest`
  (the unbound chat model, the tools it is bound to, the system message, the
  conversation, the state) and a handler that turns it back into ours: a changed model,
  tool list, `tool_choice` or `model_settings` is bound here, as `create_agent` binds it;
- `before_agent` (once an agent's run) and `before_model` run before the call: a `messages` update joins the conversation
  (stored with the turn, `add_messages` semantics: a message with a known id replaces
  it), its other keys are state, and `jump_to="end"` answers with its last AI message
  instead of calling the model;
- `after_model` runs on the accepted answer (`aafter_answer`): its tool messages answer
  calls instead of running them, its keys are state, `jump_to` goes back to the model or
  ends the run;
- `wrap_tool_call` wraps each of the agent's own tool calls with LangChain's
  `ToolCallRequest`, whose state is the agent's as the call's turn left it (`tool_state`).

A sync hook runs in a worker thread (as LangGraph runs a sync node), its handler
calling back into the run's event loop. State keys the middleware's `state_schema`
marks `UntrackedValue` live for one agent's run only (`RunHandle.step_state`); the
others are the agent's graph state (`state_keys`).

A middleware's tools are the agent's (a tool returning a `Command` writes its state),
and `HumanInTheLoopMiddleware` declares approvals on the tools it names (`as_approvals`).
`after_agent` runs once when the agent's run ends with an accepted answer
(`aafter_agent`), the last middleware first; then the run's untracked keys of that
middleware are dropped (a shell session it closed). What is not an `AgentMiddleware`
is refused at declaration (`unsupported`), with what to use instead.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, get_args, get_origin, get_type_hints

from langchain.agents.middleware import AgentMiddleware, HumanInTheLoopMiddleware
from langchain.agents.middleware.types import ExtendedModelResponse, ModelResponse
from langchain.agents.middleware.types import ModelRequest as LangChainModelRequest
from langchain.tools.tool_node import ToolCallRequest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.runnables import RunnableBinding
from langchain_core.tools import BaseTool
from langgraph.channels.untracked_value import UntrackedValue
from langgraph.errors import GraphBubbleUp
from langgraph.graph.message import add_messages

from supervisor_graph.nodes.state import FEEDBACK_MARK
from supervisor_graph.nodes.steps.protocol import (
    Answered,
    ModelHandler,
    ModelRequest,
    Step,
    ToolHandler,
    ToolRequest,
    tool_state,
)
from supervisor_graph.nodes.turn.routing import failed_result, finish_reason_of

__all__ = ["MiddlewareStep", "as_approvals", "unsupported"]

# AgentState's own keys: the agent's state has its own messages, and jumps are routing
_BASE_KEYS = frozenset({"messages", "jump_to", "structured_response"})

_JUMPED = "middleware_jumped_to_end"


def _overridden(middleware: AgentMiddleware, hook: str) -> bool:
    kind = type(middleware)
    return getattr(kind, hook) is not getattr(AgentMiddleware, hook) or getattr(kind, f"a{hook}") is not getattr(
        AgentMiddleware, f"a{hook}"
    )


def unsupported(middleware: Any) -> str | None:
    """Why `middleware` cannot run as a step (None: it can): the error `Agent(...)` raises."""
    if not isinstance(middleware, AgentMiddleware):
        return (
            f"{type(middleware).__name__} is not a LangChain AgentMiddleware (langchain.agents.middleware); "
            "use an AgentMiddleware subclass or one of its decorators (wrap_model_call, before_model, ...)"
        )
    return None


def as_approvals(middleware: Sequence[Any], tools: Mapping[str, Any]) -> dict[str, Any]:
    """The agent's tools with the approvals a `HumanInTheLoopMiddleware` asks for
    declared on them (`require_approval`): its pauses are then the approvals every driver
    shows (AG-UI, A2A, MCP, the playground) and answers (`approve`, `edit`, `reject`),
    not an interrupt of its own shape. Its step runs no hook (`MiddlewareStep`)."""
    tools = dict(tools)
    for mw in middleware:
        if not isinstance(mw, HumanInTheLoopMiddleware):
            continue
        for name, config in mw.interrupt_on.items():
            tool = tools.get(name)
            if tool is None:
                continue  # another agent's tool (the middleware is inherited by subagents)
            allowed = [d for d in config["allowed_decisions"] if d in ("approve", "edit", "reject")]
            if not allowed:
                raise ValueError(
                    f"HumanInTheLoopMiddleware: the tool {name!r} allows only {config['allowed_decisions']}; "
                    "an approval here takes 'approve', 'edit' or 'reject'"
                )
            described = config.get("description")
            policy = {"allowed_decisions": allowed, "description": described if isinstance(described, str) else mw.description_prefix}
            tools[name] = tool.model_copy(update={"metadata": {**(tool.metadata or {}), "require_approval": policy}})
    return tools


class MiddlewareStep(Step):
    """One LangChain `AgentMiddleware` as a step of the turn."""

    def __init__(self, middleware: AgentMiddleware) -> None:
        self.middleware = middleware
        self.name = f"middleware:{middleware.name}"
        # only the hooks it overrides (`Steps.of` reads `hooks`); its `after_model` runs on
        # the accepted answer, where what it returns can answer calls or end the run
        picked = {
            hook
            for hook in ("before_agent", "before_model", "wrap_model_call", "wrap_tool_call", "after_agent")
            if _overridden(middleware, hook)
        }
        self.hooks = frozenset(picked | ({"after_answer"} if _overridden(middleware, "after_model") else set()))
        if isinstance(middleware, HumanInTheLoopMiddleware):
            self.hooks = frozenset()  # its approvals are declared on the tools (`as_approvals`)
        self.state_keys, self.untracked = _keys(middleware.state_schema)

    # -- around the model call ------------------------------------------------------------

    async def abefore_agent(self, request: ModelRequest) -> Any:
        return await self._before("before_agent", request)

    async def abefore_model(self, request: ModelRequest) -> Any:
        return await self._before("before_model", request)

    async def _before(self, hook: str, request: ModelRequest) -> Any:
        update = await self._hook(hook, _state(self, request), request.runtime)
        if not update:
            return None
        messages = self._keep(update, request)
        answer = None
        if update.get("jump_to") == "end":  # answer with its message instead of the model's
            answer = next((m for m in reversed(messages) if isinstance(m, AIMessage)), AIMessage(content=""))
            messages = [m for m in messages if m is not answer]
            request.notes[_JUMPED] = True  # LangChain's jump skips every `after_model`
        if messages:
            request.added.extend(messages)
            request.messages = add_messages(list(request.messages), messages)  # type: ignore[arg-type,assignment]
        return answer

    async def awrap_model_call(self, request: ModelRequest, handler: ModelHandler) -> Any:
        asked = _langchain_request(request, _state(self, request))
        raw: dict[str, Any] = {}

        async def ours(lc: LangChainModelRequest) -> ModelResponse:
            out = await handler(_our_request(request, asked, lc))
            answer = out[0] if isinstance(out, tuple) else out  # streamed: with what its windows decided
            raw["out"], raw["response"] = out, ModelResponse(result=[answer] if answer is not None else [])
            return raw["response"]  # type: ignore[no-any-return]

        mw = self.middleware
        if type(mw).awrap_model_call is not AgentMiddleware.awrap_model_call:
            result = await mw.awrap_model_call(asked, ours)
        else:
            result = await asyncio.to_thread(mw.wrap_model_call, asked, _blocking(ours, asyncio.get_running_loop()))
        if result is raw.get("response"):
            return raw["out"]
        if isinstance(result, ExtendedModelResponse):
            if result.command is not None and isinstance(result.command.update, Mapping):
                request.updates.update({k: v for k, v in result.command.update.items() if k not in _BASE_KEYS})
            result = result.model_response
        answer = result if isinstance(result, AIMessage) else next(
            (m for m in reversed(result.result) if isinstance(m, AIMessage)), None
        )
        if answer is not None and (not request.answers or request.answers[-1] is not answer):
            request.answers.append(answer)  # an answer of the middleware's own, counted like the model's
        out = raw.get("out")
        return (answer, out[1]) if isinstance(out, tuple) else answer

    async def aafter_answer(self, request: ModelRequest, response: Any) -> Answered | None:
        if request.notes.get(_JUMPED):
            return None
        state = {**_state(self, request), "messages": [*request.messages, response]}
        update = await self._hook("after_model", state, request.runtime)
        if not update:
            return None
        out = Answered()
        for message in self._keep(update, request, out.updates):
            if isinstance(message, ToolMessage):
                out.results.append(message)  # answers a call instead of running it
        jump = update.get("jump_to")
        out.again = jump == "model"
        out.end = "stop" if jump == "end" else None
        return out

    async def aafter_agent(self, request: ModelRequest, response: Any) -> Answered | None:
        state = {**_state(self, request), "messages": [*request.messages, response]}
        update = await self._hook("after_agent", state, request.runtime)
        run_state = request.handle.step_state
        for key in self.untracked:  # the run is done with what it kept (a shell session the hook closed)
            run_state.pop(key, None)
        if not update:
            return None
        out = Answered()
        # they follow the answer in the thread; a user message there is the model's feedback,
        # not a new run's input (the run's turns and its `before_agent` go on counting)
        out.results.extend(_as_feedback(m) for m in self._keep(update, request, out.updates))
        out.again = update.get("jump_to") == "model"
        if out.results and not out.again:
            out.end = finish_reason_of(response)  # the run still ends as its answer says, with them after it
        return out

    # -- around a tool call ---------------------------------------------------------------

    async def awrap_tool_call(self, request: ToolRequest, handler: ToolHandler) -> Any:
        asked = ToolCallRequest(
            tool_call=request.tool_call, tool=request.tool, state=tool_state(request.handle), runtime=request.runtime
        )

        async def ours(lc: ToolCallRequest) -> Any:
            request.notes.pop("raised", None)
            out = await handler(request.override(tool_call=lc.tool_call, tool=lc.tool or request.tool))
            raised = request.notes.pop("raised", None)
            if raised is not None:  # LangChain's middleware acts on the tool's own failure
                raise raised
            return out

        mw = self.middleware
        try:
            if type(mw).awrap_tool_call is not AgentMiddleware.awrap_tool_call:
                return await mw.awrap_tool_call(asked, ours)
            return await asyncio.to_thread(mw.wrap_tool_call, asked, _blocking(ours, asyncio.get_running_loop()))
        except GraphBubbleUp:
            raise
        except Exception as exc:  # noqa: BLE001 - still failing once the middleware gave up: the model sees it
            call = request.tool_call
            return failed_result(call, exc)

    # -- shared ------------------------------------------------------------------------------

    async def _hook(self, hook: str, state: dict[str, Any], runtime: Any) -> dict[str, Any] | None:
        mw = self.middleware
        if getattr(type(mw), f"a{hook}") is not getattr(AgentMiddleware, f"a{hook}"):
            return await getattr(mw, f"a{hook}")(state, runtime)  # type: ignore[no-any-return]
        return await asyncio.to_thread(getattr(mw, hook), state, runtime)

    def _keep(self, update: Mapping[str, Any], request: ModelRequest, into: dict[str, Any] | None = None) -> list[BaseMessage]:
        """The update's state keys kept (the run's own for untracked keys), its messages returned."""
        run_state = request.handle.step_state
        for key, value in update.items():
            if key in _BASE_KEYS:
                continue
            if key in self.untracked:
                run_state[key] = value
            else:
                (request.updates if into is None else into)[key] = value
                request.notes.setdefault("middleware_state", {})[key] = value
        messages = update.get("messages") or []
        return list(messages) if isinstance(messages, Sequence) else [messages]


def _as_feedback(message: BaseMessage) -> BaseMessage:
    if not isinstance(message, HumanMessage) or FEEDBACK_MARK in message.additional_kwargs:
        return message
    return message.model_copy(update={"additional_kwargs": {**message.additional_kwargs, FEEDBACK_MARK: "middleware"}})


def _keys(schema: Any) -> tuple[dict[str, Any], frozenset[str]]:
    """A middleware's state keys beyond `AgentState`'s: (tracked, as graph channels; the
    untracked ones, kept for one run)."""
    if schema is None:
        return {}, frozenset()
    tracked: dict[str, Any] = {}
    untracked: set[str] = set()
    for key, hint in get_type_hints(schema, include_extras=True).items():
        if key in _BASE_KEYS:
            continue
        meta = _metadata(hint)
        if any(m is UntrackedValue or isinstance(m, UntrackedValue) for m in meta):
            untracked.add(key)
            continue
        reducer = next((m for m in meta if callable(m) and not isinstance(m, type)), None)
        tracked[key] = Annotated[Any, reducer] if reducer is not None else Any
    return tracked, frozenset(untracked)


def _metadata(hint: Any) -> tuple[Any, ...]:
    while get_origin(hint) is not Annotated and get_args(hint) and get_origin(hint) is not None:
        hint = get_args(hint)[0]  # NotRequired[...] / Required[...]
    return tuple(getattr(hint, "__metadata__", ()))


def _state(step: MiddlewareStep, request: ModelRequest) -> dict[str, Any]:
    """What a middleware's hook reads as the agent's state: the node's state and what the
    steps wrote with this turn, the run's untracked keys, and the conversation."""
    written = request.notes.get("middleware_state") or {}
    run_state = {key: request.handle.step_state[key] for key in step.untracked if key in request.handle.step_state}
    return {**request.state, **written, **run_state, "messages": list(request.messages)}


def _langchain_request(request: ModelRequest, state: dict[str, Any]) -> LangChainModelRequest:
    bound = request.model
    model, kwargs = (bound.bound, dict(bound.kwargs)) if isinstance(bound, RunnableBinding) else (bound, {})
    tools = _as_declared(kwargs.pop("tools", []), request.spec)
    tool_choice = kwargs.pop("tool_choice", None)
    return LangChainModelRequest(
        model=model,  # type: ignore[arg-type]
        messages=list(request.messages),  # type: ignore[arg-type]
        system_message=SystemMessage(content=request.system) if request.system else None,
        tools=list(tools),
        tool_choice=tool_choice,
        state=state,  # type: ignore[arg-type]
        runtime=request.runtime,
        model_settings=kwargs,
    )


def _as_declared(tools: Sequence[Any], spec: Any) -> list[Any]:
    """The bound tool schemas as the agent declared them: its own tools and its steps'
    are `BaseTool`s again, as in LangChain's request (`ProviderToolSearchMiddleware`
    reads their `extras`); a delegation tool stays the provider's dict."""
    if spec is None:
        return list(tools)
    declared = {t.name: t for t in spec.steps.tools if isinstance(t, BaseTool)}
    declared.update((name, t) for name, t in spec.tools.items() if isinstance(t, BaseTool))
    return [declared.get(_tool_name(t), t) if isinstance(t, Mapping) else t for t in tools]


def _tool_name(schema: Mapping[str, Any]) -> str:
    function = schema.get("function")
    return str(function.get("name", "") if isinstance(function, Mapping) else schema.get("name", ""))


def _our_request(request: ModelRequest, asked: LangChainModelRequest, lc: LangChainModelRequest) -> ModelRequest:
    """`lc`, what the middleware hands on, as our request: only what it changed."""
    changes: dict[str, Any] = {}
    if lc.messages is not asked.messages:
        changes["messages"] = lc.messages
    if lc.system_message is not asked.system_message:
        changes["system"] = lc.system_message.text if lc.system_message is not None else ""
    rebind = (
        lc.model is not asked.model
        or lc.tools is not asked.tools
        or lc.tool_choice is not asked.tool_choice
        or lc.model_settings is not asked.model_settings
    )
    if rebind:
        settings = dict(lc.model_settings)
        if lc.tool_choice is not None:
            settings["tool_choice"] = lc.tool_choice
        changes["model"] = lc.model.bind_tools(lc.tools, **settings) if lc.tools else lc.model.bind(**settings)
    return request.override(**changes) if changes else request


def _blocking(handler: Any, loop: asyncio.AbstractEventLoop) -> Any:
    """A sync handler for a sync hook in a worker thread: the call runs on the run's loop."""

    def call(request: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(handler(request), loop).result()

    return call

