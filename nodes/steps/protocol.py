"""The step protocol: what a capability of an agent's turn may hook into (SPEC §32).

Shaped like LangChain v1's `AgentMiddleware` (`langchain.agents.middleware`), so that a
later release can run LangChain's middleware as steps unchanged: `awrap_model_call` and
`awrap_tool_call` wrap the call with a `handler` that makes it (a step may change the
request, call the handler, retry it, or answer without it), `abefore_model` /
`aafter_model` run beside it, `stop` may end the agent's run before its model is called
(LangChain's `jump_to="end"`), `state_keys` are the state channels the step brings and
`tools` the tool schemas it offers the model. A step whose tools are answered in the
turn, not by the tools node (working memory's update, background-task control), names
them in `answers` and answers them in `aanswer_calls`, once the answer is accepted.

The compiler builds an agent's steps once (`AgentSpec.steps`); a run adds the steps of
what it brings itself (its budgets: `Steps.plus`, cached); the turn
(`nodes/turn/turn.py`) composes the ones that wrap the model call, and the tools node
(`nodes/turn/tools.py`) the ones that wrap a tool call, outermost first. A step that
does not override a hook costs nothing there; an agent with no optional capability has
no step around its model call (it is the bare handler), and one without tools has no
steps at all (an agent with tools has the approvals' step around its tool calls).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, TypeVar

from langchain_core.messages import BaseMessage, ToolMessage
from langchain_core.runnables import RunnableConfig

__all__ = [
    "NO_STEPS",
    "Answered",
    "AnswerShape",
    "ModelHandler",
    "ModelRequest",
    "Step",
    "Steps",
    "ToolHandler",
    "TURN_STATE",
    "ToolRequest",
    "as_tool_message",
    "tool_state",
]


@dataclass(slots=True)
class ModelRequest:
    """One model call of a turn as its steps see it: LangChain's `ModelRequest` fields
    (the bound `model`, the `system` prompt, the conversation `messages`, the node's
    `state`), the parent's read-only `context` the call shows before the conversation,
    and what the turn hands its steps: the node's `config`, the run's `handle` and its
    event `emit`ter. `updates` collects the state keys steps write with this turn, and
    `spent` the usage of model calls steps made for it (a summary), which budgets
    count, and `notes` what a step keeps between its hooks of one call (the value it
    showed, say); all three are shared by every copy `override` makes. `runtime` is the
    node's LangGraph `Runtime` (its store), as in LangChain's request."""

    model: Any
    system: str
    messages: Sequence[BaseMessage]
    context: Sequence[BaseMessage]
    state: Mapping[str, Any]
    config: RunnableConfig
    handle: Any
    emit: Any
    updates: dict[str, Any] = field(default_factory=dict)
    spent: list[Any] = field(default_factory=list)
    runtime: Any = None
    notes: dict[str, Any] = field(default_factory=dict)
    # the shape the answer must take this run (LangChain's `response_format`), if any
    response_format: Any = None
    # the agent's compiled spec, and the turn's number in its run (1: the first call)
    spec: Any = None
    iteration: int = 0
    # how the model answers: `quiet`, its tokens do not stream to the caller (a step checks
    # the answer first); `stream`, a step reads the answer as it streams (the streaming
    # output guards): `stream(chunks, request)` is then what the call returns
    quiet: bool = False
    stream: Callable[[Any, ModelRequest], Awaitable[Any]] | None = None
    # shared by every copy: every answer the model gave for this call, as it gave it (a
    # step may change or drop one), and the messages steps add to the conversation with
    # it (a redacted input, which replaces its original; when the call keeps no answer,
    # the feedback the model answers next)
    answers: list[Any] = field(default_factory=list)
    added: list[BaseMessage] = field(default_factory=list)
    # what a step tells the model for this call only (a budget notice, a working memory's
    # value): shown after the conversation, so that everything before it is the same bytes
    # from call to call (providers' prompt caches, issue 51)
    tail: tuple[str, ...] = ()

    def override(self, **changes: Any) -> ModelRequest:
        """A copy with `changes` (LangChain's `ModelRequest.override`)."""
        return replace(self, **changes)


ModelHandler = Callable[[ModelRequest], Awaitable[Any]]


@dataclass(slots=True)
class Answered:
    """What steps answered of a turn's tool calls in the turn: the `results` (after the
    answer in the thread), the state keys they write (`updates`), extra payload for a
    call's `tool-call` event (`marks`, by call id), events that follow the turn's own
    (`events`), and either `again`: the model goes on at once (the turn was only
    bookkeeping, or its answer is sent back; LangChain's `jump_to="model"`), or `end`:
    the run ends with this finish reason ("error" skips the gates after an answer)."""

    results: list[Any] = field(default_factory=list)
    updates: dict[str, Any] = field(default_factory=dict)
    marks: dict[str, dict[str, Any]] = field(default_factory=dict)
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    again: bool = False
    end: str | None = None

    def add(self, other: Answered) -> None:
        self.results.extend(other.results)
        self.updates.update(other.updates)
        self.marks.update(other.marks)
        self.events.extend(other.events)
        self.again = self.again or other.again
        self.end = self.end or other.end


class AnswerShape(Protocol):
    """The shape an answer must take (`nodes/steps/structured_output.py`'s
    `OutputSchema`), as binding a model needs it: a key for the bound model's cache and
    the tool schemas and `bind_tools` arguments that make the model answer in it."""

    key: str

    def binding(self, model: Any, schemas: list[Any]) -> tuple[list[Any], dict[str, Any]]: ...


@dataclass(slots=True)
class ToolRequest:
    """One of the agent's own tool calls as its steps see it: LangGraph's
    `ToolCallRequest` fields (`tool_call`, `tool`, `runtime`), the node's `config` and
    the run's `handle`, and what the tools node hands its steps: the agent's `spec`, the
    `namespace` of the graph that made the call (it keys the call's pauses), the event
    `emit`ter and `approve_all` (the run asks before every tool call). `notes` is shared
    by every copy `override` makes: what the steps tell the tools node back (`answers`:
    the pauses they had answered, `held`: a result held for a person), and the call as a
    step last handed it on (`ran`). The handler answers with what the tool returned (a
    `ToolMessage`, or its output)."""

    tool_call: Any
    tool: Any
    runtime: Any
    config: RunnableConfig
    handle: Any
    spec: Any = None
    namespace: str = ""
    emit: Any = None
    approve_all: bool = False
    notes: dict[str, Any] = field(default_factory=dict)

    def override(self, **changes: Any) -> ToolRequest:
        """A copy with `changes` (LangChain's `ToolCallRequest.override`); a changed
        `tool_call` is the one the call's result event reports (`ran`)."""
        if "tool_call" in changes:
            self.notes["tool_call"] = changes["tool_call"]
        return replace(self, **changes)

    def ran(self) -> Any:
        """The call as the steps last handed it on (approved, edited, its arguments guarded)."""
        return self.notes.get("tool_call", self.tool_call)

    def answered(self, count: int) -> None:
        """Count `count` answers of a person used while this call was decided or ran: a
        leaf's loop must know whether its task may still pause."""
        if count:
            self.notes["answers"] = self.notes.get("answers", 0) + count


ToolHandler = Callable[[ToolRequest], Awaitable[Any]]


# `RunHandle.step_state`'s key for the agent's last accepted turn: (the node's state, its
# conversation, how much of it the call saw, the answer), what its tool calls read as the
# agent's state (`tool_state`)
TURN_STATE = "__turn__"


def tool_state(handle: Any) -> dict[str, Any]:
    """The agent's state as a tool call of its last turn sees it (LangGraph's
    `ToolRuntime.state`, LangChain's `ToolCallRequest.state`): the node's state, the
    keys steps keep for the run (a middleware's untracked state) and the conversation
    up to the answer that made the call. Built per call, for the calls that read it."""
    run_state = handle.step_state if handle is not None else {}
    turn = run_state.get(TURN_STATE)
    kept = {key: value for key, value in run_state.items() if key != TURN_STATE}
    if turn is None:
        return kept
    state, messages, seen, answer = turn
    return {**state, **kept, "messages": [*messages[:seen], answer]}


def as_tool_message(output: Any, call: Any) -> ToolMessage:
    """What a tool call's handler answered, as the result the model sees."""
    if isinstance(output, ToolMessage):
        return output
    return ToolMessage(content=str(output), tool_call_id=call["id"] or "", name=call["name"])


class Step:
    """A capability of the turn. Override only the hooks the capability needs."""

    name: str = ""
    # state channel -> its annotation (a reducer with `Annotated`), added to the agent's state
    state_keys: Mapping[str, Any] = {}
    # tool schemas (or `BaseTool`s) this step offers the model
    tools: Sequence[Any] = ()
    # the names of the tools whose calls this step answers in the turn (`aanswer_calls`)
    answers: frozenset[str] = frozenset()
    # tools whose calls are bookkeeping: a turn that calls only these is no iteration (up
    # to a bound), and the task-completion scorers do not judge them
    free: frozenset[str] = frozenset()

    def stop(self, handle: Any) -> str | None:
        """Before the turn calls the model: a finish reason ends the agent's run there
        instead (LangChain's `before_model` returning `jump_to="end"`)."""
        return None

    async def abefore_agent(self, request: ModelRequest) -> Any:
        """Once an agent's run, before its first model call (LangChain's `before_agent`):
        None, or an answer that stands for the model's, as `abefore_model`'s does."""
        return None

    async def abefore_model(self, request: ModelRequest) -> Any:
        """Before each model call, after the turn decided to call the model: None, or an
        answer that stands for the model's, which is then not called (LangChain's
        `before_model` returning `jump_to="end"` with its message)."""

    async def awrap_model_call(self, request: ModelRequest, handler: ModelHandler) -> Any:
        """Around each model call: `await handler(request)` makes it."""
        return await handler(request)

    async def aafter_model(self, request: ModelRequest, response: Any) -> None:
        """After each model call, with what it answered."""

    async def awrap_tool_call(self, request: ToolRequest, handler: ToolHandler) -> Any:
        """Around each tool call of the turn: `await handler(request)` runs it."""
        return await handler(request)

    async def aanswer_calls(self, request: ModelRequest, response: Any) -> Answered | None:
        """The turn's calls of this step's own tools (`answers`), answered in the turn once
        its answer is accepted (after the guards), before it is routed."""
        return None

    async def aafter_answer(self, request: ModelRequest, response: Any) -> Answered | None:
        """Every accepted answer of the turn, after its own calls are answered: what it
        adds, and whether the run goes on, goes back to the model or ends."""
        return None

    async def aafter_agent(self, request: ModelRequest, response: Any) -> Answered | None:
        """Once the agent's run ends with an accepted answer (`response`: no call left to
        run, or a step ended the run), after every `aafter_answer` (LangChain's
        `after_agent`): what it adds, and whether the model goes on after all (`again`)."""
        return None


def _capabilities(step: Step) -> list[type]:
    return [kind for kind in type(step).__mro__ if issubclass(kind, Step) and kind is not Step]


def _overrides(step: Step, hook: str) -> bool:
    hooks = getattr(step, "hooks", None)  # a step whose hooks depend on what it wraps says which
    if hooks is not None:
        return hook[1:] in hooks
    return getattr(type(step), hook) is not getattr(Step, hook)


@dataclass(frozen=True, slots=True)
class Steps:
    """An agent's steps, in declaration order, with the ones using each hook picked out
    once (at compile time), so a turn never asks a step for a hook it lacks."""

    all: tuple[Step, ...] = ()
    before_agent: tuple[Step, ...] = ()
    before_model: tuple[Step, ...] = ()
    wrap_model_call: tuple[Step, ...] = ()
    after_model: tuple[Step, ...] = ()
    wrap_tool_call: tuple[Step, ...] = ()
    stop: tuple[Step, ...] = ()
    answer_calls: tuple[Step, ...] = ()
    after_answer: tuple[Step, ...] = ()
    after_agent: tuple[Step, ...] = ()
    answered: frozenset[str] = frozenset()  # every tool name the steps answer in the turn
    free: frozenset[str] = frozenset()  # every bookkeeping tool name of the steps
    # the tool schemas the steps offer the model, and every state channel they bring,
    # in the steps' order (read when a model is bound and when a leaf's journal opens)
    tools: tuple[Any, ...] = ()
    state_keys: Mapping[str, Any] = field(default_factory=dict)
    # each step by its class and the capability classes it extends: how a capability
    # finds its own step's settings (`find`)
    kinds: Mapping[type, Step] = field(default_factory=dict)
    # step -> these steps with it last (`plus`), made once per step
    _plus: dict[int, Steps] = field(default_factory=dict, init=False, compare=False, repr=False)

    @classmethod
    def of(cls, steps: Sequence[Step]) -> Steps:
        if not steps:
            return NO_STEPS
        picked = {hook: tuple(s for s in steps if _overrides(s, f"a{hook}")) for hook in _HOOKS}
        tools = tuple(tool for step in steps for tool in step.tools)
        keys = {key: kind for step in steps for key, kind in step.state_keys.items()}
        # a step answers to its class and to each capability class it extends (`find`)
        kinds = {kind: step for step in reversed(steps) for kind in _capabilities(step)}
        stop = tuple(s for s in steps if type(s).stop is not Step.stop)
        answered = frozenset(name for step in steps for name in step.answers)
        free = frozenset(name for step in steps for name in step.free)
        return cls(
            all=tuple(steps), tools=tools, state_keys=keys, kinds=kinds, stop=stop, answered=answered, free=free, **picked
        )

    def plus(self, step: Step) -> Steps:
        """These steps and `step` after them (innermost), for a run that brings it: built
        once per step, since a run's own steps are module-level singletons."""
        done = self._plus.get(id(step))
        if done is None:
            done = self._plus[id(step)] = Steps.of([*self.all, step])
        return done

    async def settle(self, request: ModelRequest, response: Any) -> Answered | None:
        """What the steps make of an accepted answer: the calls of their own tools answered
        (`aanswer_calls`), then each `aafter_answer`, then, when the answer ends the run,
        each `aafter_agent`; None when no step has anything to do with it (the common
        turn: one set lookup per call)."""
        own = bool(self.answered) and any(call["name"] in self.answered for call in response.tool_calls)
        if not own and not self.after_answer and not self.after_agent:
            return None
        out = Answered()
        for step in self.answer_calls if own else ():
            if any(call["name"] in step.answers for call in response.tool_calls):
                done = await step.aanswer_calls(request, response)
                if done is not None:
                    out.add(done)
        for step in self.after_answer:
            done = await step.aafter_answer(request, response)
            if done is not None:
                out.add(done)
        if self.after_agent and not out.again and (out.end is not None or not response.tool_calls):
            for step in reversed(self.after_agent):  # the run ends here: the last step first, as LangChain chains them
                done = await step.aafter_agent(request, response)
                if done is not None:
                    out.add(done)
        return out

    def stop_reason(self, handle: Any) -> str | None:
        """Why a step ends the run before the next model call, if one does."""
        for step in self.stop:
            reason = step.stop(handle)
            if reason is not None:
                return reason
        return None

    def find(self, kind: type[S]) -> S | None:
        """The agent's step of class `kind` (or a subclass), if it has one: a capability
        reads its settings from its own step, so the spec need not know the capability."""
        return self.kinds.get(kind)  # type: ignore[return-value]

    async def call_model(self, request: ModelRequest, innermost: ModelHandler) -> Any:
        """`innermost(request)` with the steps around it: each `abefore_model`, then the
        call wrapped by each `awrap_model_call` (the first step outermost, LangChain's
        order), then each `aafter_model`."""
        for step in self.before_agent if request.iteration == 1 else ():
            instead = await step.abefore_agent(request)
            if instead is not None:
                return instead
        for step in self.before_model:
            instead = await step.abefore_model(request)
            if instead is not None:  # LangChain's `jump_to="end"`: this answer, no model call
                return instead
        handler = innermost
        for step in reversed(self.wrap_model_call):
            handler = _bind(step, handler)
        response = await handler(request)
        for step in self.after_model:
            await step.aafter_model(request, response)
        return response


    async def call_tool(self, request: ToolRequest, innermost: ToolHandler) -> Any:
        """`innermost(request)` wrapped by each step's `awrap_tool_call`, the first outermost."""
        handler = innermost
        for step in reversed(self.wrap_tool_call):
            handler = _bind_tool(step, handler)
        return await handler(request)


S = TypeVar("S", bound=Step)
_HOOKS = (
    "before_agent", "before_model", "wrap_model_call", "after_model", "wrap_tool_call", "answer_calls", "after_answer", "after_agent",
)
NO_STEPS = Steps()


def _bind(step: Step, handler: ModelHandler) -> ModelHandler:
    async def call(request: ModelRequest) -> Any:
        return await step.awrap_model_call(request, handler)

    return call


def _bind_tool(step: Step, handler: ToolHandler) -> ToolHandler:
    async def call(request: ToolRequest) -> Any:
        return await step.awrap_tool_call(request, handler)

    return call
