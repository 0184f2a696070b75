"""`Agent`: the declaration users write (SPEC §3), and the entries that compile and run it.

Its methods hand the work to `compiler/` and `run/`; nothing below imports this module
except for annotations."""

from __future__ import annotations

import re
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool
from langgraph.types import RetryPolicy
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator, model_validator

from supervisor_graph.compiler.build import compile_agent
from supervisor_graph.declaration.a2a import A2AAgent
from supervisor_graph.declaration.agent_rules import (
    agents_from,
    background_settings_of,
    check_cycles,
    check_tool_names,
    model_retry_policy,
)
from supervisor_graph.declaration.fallbacks import agent_model
from supervisor_graph.declaration.middleware import MiddlewareList
from supervisor_graph.declaration.remote import RemoteAgent, RemoteSubagent
from supervisor_graph.declaration.tools import tools_by_name
from supervisor_graph.memory.memory import Memory
from supervisor_graph.nodes.background.tasks import BackgroundSettings, BackgroundTaskConfig
from supervisor_graph.nodes.delegation.control import InheritContext
from supervisor_graph.nodes.guards.core import Guardrail
from supervisor_graph.nodes.options import RunOptions
from supervisor_graph.nodes.scope.context import RequestContext
from supervisor_graph.nodes.steps.budget import Budget
from supervisor_graph.nodes.steps.compaction import CompactionSettings
from supervisor_graph.nodes.steps.decisions import decision_payload
from supervisor_graph.nodes.steps.structured_output import OutputSchema, output_schema_of
from supervisor_graph.nodes.steps.working_memory import WorkingMemory
from supervisor_graph.run.facade import generate, run_sync, stream, stream_sync
from supervisor_graph.run.history import history
from supervisor_graph.run.idle import generate_until_idle, recover_background_tasks, stream_until_idle
from supervisor_graph.run.resume import resume

if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver
    from langgraph.graph.state import CompiledStateGraph
    from langgraph.store.base import BaseStore

    from supervisor_graph.run.facade import AgentStream, GenerateResult

__all__ = ["Agent", "SUBAGENT_KEY"]

SUBAGENT_KEY = re.compile(r"^[A-Za-z0-9_-]{1,56}$")


class Agent(BaseModel):
    """A supervisor or subagent, declared in plain Python.

    Example:
        >>> from supervisor_graph.testing import ScriptedChatModel
        >>> research = Agent(id="research-agent", description="Finds facts.",
        ...                  model=ScriptedChatModel(responses=["- fact"]))
        >>> parent = Agent(id="parent-agent", instructions="Delegate research.",
        ...                model=ScriptedChatModel(responses=["done"]),
        ...                agents={"research_agent": research})
        >>> sorted(n for n in parent.compile().get_graph().nodes if "research" in n)
        ['research_agent', 'research_agent.complete', 'research_agent.start']
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid", validate_assignment=True)

    id: str = Field(description="Unique id; subagents are known to hooks by it (primitive_id).")
    name: str | None = None
    description: str | None = Field(default=None, description="Required on subagents: the supervisor reads it.")
    instructions: str | Callable[..., Any] | None = None
    model: str | BaseChatModel | Callable[..., Any] | list[Any]
    tools: dict[str, BaseTool] = Field(default_factory=dict)
    agents: dict[str, Agent | RemoteAgent | A2AAgent] = Field(
        default_factory=dict,
        description="Subagents by key, or callable(request_context) -> that dict, chosen per call (SPEC §21).",
    )
    agents_factory: Callable[..., Any] | None = Field(
        default=None, exclude=True, description="Set from a callable `agents=`: it chooses the subagents per call."
    )
    memory: Memory | None = None
    default_options: dict[str, Any] = Field(default_factory=dict)
    subagent_threads: Literal["per_delegation", "per_parent_thread"] = "per_delegation"
    background_tasks: BackgroundSettings | None = Field(
        default=None,
        description='Subagents whose delegations run in the background (SPEC §12): {"tools": {key: {"enabled": True, '
        '"timeout_ms": 900_000, "retries": 0}}}.',
    )
    working_memory: WorkingMemory | None = Field(
        default=None,
        description='A persistent scratchpad (SPEC §8): {"scope": "resource" | "thread", "template": str} or '
        '{"scope": ..., "schema": PydanticModel}; True for the defaults.',
    )
    inherit_context: bool | InheritContext = Field(
        default=True,
        description="As a subagent, see the newest turns of the parent's conversation: True, at most 1,000 tokens of them; "
        '{"max_tokens": N} and/or {"turns": K}; {} all of them; False: only the delegation\'s prompt (SPEC §25).',
    )
    expose_max_steps: bool = Field(default=False, description="Offer its model a max_steps argument on each delegation tool.")
    result_preview_tokens: int | None = Field(
        default=None, ge=1, description="As a subagent, longer answers reach the supervisor as a preview and a [ref: id]."
    )
    compaction: CompactionSettings | None = Field(
        default=None, description='Older turns summarised to keep its model input small (SPEC §25): {"max_tokens", "keep_last", "model"}.'
    )
    budget: Budget | None = Field(
        default=None, description='Limits for each run of this agent (SPEC §25): {"tokens", "seconds", "tool_calls"}.'
    )
    tracing: bool = Field(
        default=True,
        description="OpenTelemetry spans for this agent's runs when a tracer provider is configured (SPEC §24).",
    )
    output_schema: OutputSchema | None = Field(
        default=None,
        description="The shape of its final answer (SPEC §28): a pydantic model, a TypedDict or a JSON-schema dict; "
        "result.object is the validated value, and as a subagent it answers its delegations with it.",
    )
    guardrails: list[Guardrail] | None = Field(default=None, description="Guards at its boundaries (SPEC §30); None: its parent's.")
    middleware: MiddlewareList | None = Field(default=None, description="LangChain middleware (SPEC §33); None: its parent's.")
    prompt_cache: bool = Field(default=True, description="Ask its model's provider to cache its prompt prefix (SPEC §33).")
    retry_policy: Any = Field(
        default_factory=lambda: model_retry_policy(),
        description="LangGraph RetryPolicy for this agent's model calls (None: no retries).",
    )

    _graph: Any = PrivateAttr(default=None)
    _graphs: Any = PrivateAttr(default=None)
    _defaults: RunOptions | None = PrivateAttr(default=None)
    _variants: Any = PrivateAttr(default=None)

    @field_validator("output_schema", mode="before")
    @classmethod
    def _output_schema(cls, value: Any) -> Any:
        return output_schema_of(value, "Agent(output_schema=...)")

    @field_validator("id")
    @classmethod
    def _id_not_empty(cls, value: str) -> str:
        if not value or not value.strip():
            raise ValueError("id must be a non-empty string")
        return value

    @field_validator("model", mode="before")
    @classmethod
    def _known_provider(cls, value: Any) -> Any:
        return agent_model(value)  # a list: the models to fall back on (SPEC §33)

    @field_validator("tools", mode="before")
    @classmethod
    def _normalise_tools(cls, value: Any) -> dict[str, BaseTool]:
        return tools_by_name(value)

    @model_validator(mode="before")
    @classmethod
    def _agents_callable(cls, data: Any) -> Any:
        if isinstance(data, dict) and callable(data.get("agents")) and not isinstance(data["agents"], dict):
            factory = data["agents"]
            data = {**data, "agents_factory": factory, "agents": agents_from(factory, RequestContext(), data.get("id"), (cls, RemoteSubagent))}
        return data

    @field_validator("agents")
    @classmethod
    def _check_subagents(cls, value: dict[str, Agent]) -> dict[str, Agent]:
        seen: dict[str, str] = {}
        for key, sub in value.items():
            if not SUBAGENT_KEY.match(key):
                raise ValueError(
                    f"subagent key {key!r} must match ^[A-Za-z0-9_-]{{1,56}}$ (it names a graph node and the tool agent-{key})"
                )
            if not sub.description:
                raise ValueError(f"subagent {key!r} (id {sub.id!r}) needs a description: the supervisor model reads it")
            if sub.id in seen:
                raise ValueError(
                    f"subagents {seen[sub.id]!r} and {key!r} have the same id {sub.id!r}; ids must be unique"
                )
            seen[sub.id] = key
        return value

    @field_validator("working_memory", mode="before")
    @classmethod
    def _working_memory(cls, value: Any) -> Any:
        if value is True:
            return WorkingMemory()
        if value is False:
            return None
        return value

    @field_validator("retry_policy")
    @classmethod
    def _retry_policy(cls, value: Any) -> Any:
        if value is not None and not isinstance(value, RetryPolicy):
            raise ValueError("retry_policy must be a langgraph.types.RetryPolicy or None")
        return value

    @field_validator("default_options")
    @classmethod
    def _check_options(cls, value: dict[str, Any]) -> dict[str, Any]:
        RunOptions.model_validate(value)
        return value

    @model_validator(mode="after")
    def _check_tree(self) -> Agent:
        check_tool_names(self)
        local = {key for key, sub in self.agents.items() if isinstance(sub, Agent)}
        unknown = sorted(set(self.background_tasks.tools) - local) if self.background_tasks else []
        if unknown:
            raise ValueError(
                f"background_tasks: {', '.join(map(repr, unknown))} is not a local subagent key of {self.id!r} "
                f"(its local subagents: {', '.join(sorted(local)) or 'none'}; a RemoteAgent or A2AAgent runs on its server)"
            )
        check_cycles(self)
        if self.memory is not None:
            self.memory.register(self)
        self._graph = self._graphs = None
        self._defaults = None
        return self

    def for_request(self, request_context: RequestContext | None) -> Agent:
        """This agent with the subagents its `agents` callable chooses for
        `request_context` (itself when `agents` is a dict). Each distinct set, by its keys
        and agent ids, is compiled once (a later set with the same keys and ids reuses the
        first one's definitions); the 32 most recently used are kept."""
        factory = self.agents_factory
        if factory is None:
            return self
        chosen = agents_from(
            factory, request_context if request_context is not None else RequestContext(), self.id, (Agent, RemoteSubagent)
        )
        key = tuple(sorted((k, v.id) for k, v in chosen.items()))
        if self._variants is None:
            self._variants = OrderedDict()
        variant = self._variants.get(key)
        if variant is None:
            try:
                variant = self.model_copy(update={"agents": chosen, "agents_factory": None})
            except ValidationError as exc:
                raise ValueError(f"Agent {self.id!r}: the subagents its agents callable chose are invalid: {exc}") from None
            self._variants[key] = variant
            if len(self._variants) > _VARIANTS:
                self._variants.popitem(last=False)
        else:
            self._variants.move_to_end(key)
        return variant  # type: ignore[no-any-return]

    def model_copy(self, *, update: Any = None, deep: bool = False) -> Agent:
        """A copy, validated again when `update` is given (its caches start empty)."""
        copied = super().model_copy(update=update, deep=deep)
        copied._graph = copied._graphs = None
        copied._variants = None
        copied._defaults = None
        if update:
            return type(self).model_validate({name: getattr(copied, name) for name in type(self).model_fields})
        return copied

    def agents_along(self, agent_path: Sequence[str]) -> list[Any]:
        """This agent and the subagents along `agent_path` (ids from this agent down, as a
        chunk or a pause reports them), as far as they are known (`Agent`s, and a
        `RemoteAgent` or `A2AAgent` at the end)."""
        agents: list[Any] = [self]
        for agent_id in agent_path[1:]:
            found = next((sub for sub in agents[-1].agents.values() if sub.id == agent_id), None)
            if found is None:
                break
            agents.append(found)
        return agents

    @property
    def effective_working_memory(self) -> WorkingMemory | None:
        """This agent's working memory: its own, else its `Memory`'s."""
        if self.working_memory is not None:
            return self.working_memory
        return self.memory.working_memory if self.memory is not None else None

    @property
    def background_settings(self) -> BackgroundSettings | None:
        """The background setting of every subagent whose delegations run as background
        tasks (SPEC §12): those listed in `background_tasks`, and, inherited (seed 000), a
        local subagent not listed there that has a background-eligible tool
        (`create_tool(background=...)`): it runs in the background with that tool's
        setting (its first such tool's). None when no delegation runs in the background."""
        return background_settings_of(self.background_tasks, self.agents)

    def background_setting_for(self, key: str) -> BackgroundTaskConfig | None:
        """The background setting of subagent `key` (declared or inherited), if it runs in
        the background."""
        settings = self.background_settings
        return settings.for_key(key) if settings is not None else None

    @property
    def has_background_subagents(self) -> bool:
        """True when some delegation of this agent may run as a background task (SPEC §12)."""
        return self.background_settings is not None

    # -- compile and run -----------------------------------------------------

    @property
    def defaults(self) -> RunOptions:
        """`default_options`, validated."""
        if (found := self.__pydantic_private__["_defaults"]) is None:  # type: ignore[index]  # ~1.4 us less than self._defaults
            found = self._defaults = RunOptions.model_validate(self.default_options)
        return found  # type: ignore[no-any-return]

    def compile(self, checkpointer: Any = None, store: Any = None) -> CompiledStateGraph:
        """This agent as a LangGraph `CompiledStateGraph` (SPEC §4)."""
        return compile_agent(self, checkpointer=checkpointer, store=store)

    @property
    def graph(self) -> CompiledStateGraph:
        """The graph `generate()` runs, compiled once without a checkpointer."""
        if self._graph is None:
            self._graph = self.compile()
        return self._graph

    def graph_with(self, checkpointer: BaseCheckpointSaver, store: BaseStore | None = None) -> CompiledStateGraph:
        """`graph` with `checkpointer` (and `store`) attached, made once per checkpointer (a
        copy of the compiled graph: nodes, channels and bound models are shared)."""
        graphs = self.__pydantic_private__["_graphs"]  # type: ignore[index]
        entry = graphs.get(checkpointer) if graphs is not None else None
        if entry is None or entry[0] is not store:
            graphs = self._graphs = weakref.WeakKeyDictionary() if graphs is None else graphs
            entry = graphs[checkpointer] = (store, self.graph.copy(update={"checkpointer": checkpointer, "store": store}))
        return entry[1]  # type: ignore[no-any-return]

    async def generate(self, prompt: Any, **options: Any) -> GenerateResult:
        """Run to the end and return the result (options of SPEC §5)."""
        return await generate(self, prompt, **options)

    async def stream(self, prompt: Any, **options: Any) -> AgentStream:
        """Start a run and stream it: `text_stream`, `full_stream`, `await result()`."""
        return await stream(self, prompt, **options)

    # -- answering a paused run ------------------------------------------------

    async def _answer(self, kind: str, value: Any, streaming: bool, target: dict[str, Any]) -> Any:
        key = target.pop("interrupt_id", None) or target.pop("tool_call_id", None)
        target.pop("tool_call_id", None)
        if kind == "approval":  # an edit's args / a rejection's reason go with the decision (SPEC §29)
            value = decision_payload(value, target.pop("args", None), target.pop("message", None))
        answers = {key: value} if key else None
        return await resume(self, answers, value=value, streaming=streaming, kind=kind, **target)

    async def approve_tool_call(
        self,
        *,
        run_id: str | None = None,
        tool_call_id: str | None = None,
        interrupt_id: str | None = None,
        memory: Any = None,
        args: dict[str, Any] | None = None,
        **options: Any,
    ) -> GenerateResult:
        """Approve a pending tool call and run on to the end (or the next pause); with
        `args`, it runs with those (checked against its input schema first; invalid ones
        raise and it stays pending). `interrupt_id` stays unambiguous when two subagents'
        calls share a tool call id. Without `memory`, the run is found by `run_id` among
        this process's paused runs. The decline and stream variants take the same keywords.
        """
        target = {"run_id": run_id, "tool_call_id": tool_call_id, "interrupt_id": interrupt_id, "memory": memory}
        return await self._answer("approval", True, False, {**target, "args": args, **options})  # type: ignore[no-any-return]

    async def decline_tool_call(self, **target: Any) -> GenerateResult:
        """Decline a pending tool call: it never runs and its model is told so, with the
        reason given as `message=`."""
        return await self._answer("approval", False, False, target)  # type: ignore[no-any-return]

    async def approve_tool_call_stream(self, **target: Any) -> AgentStream:
        """`approve_tool_call`, streaming the rest of the run."""
        return await self._answer("approval", True, True, target)  # type: ignore[no-any-return]

    async def decline_tool_call_stream(self, **target: Any) -> AgentStream:
        """`decline_tool_call`, streaming the rest of the run."""
        return await self._answer("approval", False, True, target)  # type: ignore[no-any-return]

    async def resume_generate(
        self,
        resume_data: Any,
        *,
        run_id: str | None = None,
        tool_call_id: str | None = None,
        interrupt_id: str | None = None,
        memory: Any = None,
        **options: Any,
    ) -> GenerateResult:
        """Resume a tool paused with `suspend()`; the tool receives `resume_data`.
        `resume_stream` takes the same arguments and streams the rest of the run."""
        target = {"run_id": run_id, "tool_call_id": tool_call_id, "interrupt_id": interrupt_id, "memory": memory}
        return await self._answer("suspend", resume_data, False, {**target, **options})  # type: ignore[no-any-return]

    async def resume_stream(self, resume_data: Any, **target: Any) -> AgentStream:
        """`resume_generate`, streaming the rest of the run."""
        return await self._answer("suspend", resume_data, True, target)  # type: ignore[no-any-return]

    async def resume(
        self, answers: dict[str, Any], *, run_id: str | None = None, memory: Any = None, **options: Any
    ) -> GenerateResult:
        """Answer several pending items at once: `{interrupt or tool call id: answer}`
        (a decision for approvals, the resume data for suspended tools)."""
        return await resume(self, answers, run_id=run_id, memory=memory, **options)  # type: ignore[return-value]

    async def stream_until_idle(self, prompt: Any, **options: Any) -> AgentStream:
        """`stream`, kept open until every background task the run starts has ended and
        the supervisor has answered each outcome (SPEC §12)."""
        return await stream_until_idle(self, prompt, **options)

    async def generate_until_idle(self, prompt: Any, **options: Any) -> GenerateResult:
        """`generate`, returning once every background task of the run has been answered."""
        return await generate_until_idle(self, prompt, **options)

    async def recover_background_tasks(self, *, memory: Any, **options: Any) -> GenerateResult | None:
        """Re-run (or fail) the thread's background tasks whose process died, and have the
        supervisor answer every outcome the thread has not been told of (None: nothing to
        report). The next call on the thread does the same on its own."""
        return await recover_background_tasks(self, memory=memory, **options)

    async def history(self, *, memory: Any, limit: int | None = None) -> list[dict[str, Any]]:
        """The thread's checkpoints, newest first (SPEC §34); `generate(..., memory={...,
        "checkpoint": ID})` forks from one."""
        return await history(self, memory, limit)

    def generate_sync(self, prompt: Any, **options: Any) -> GenerateResult:
        """`generate` for scripts and notebooks."""
        return run_sync(self.generate(prompt, **options))

    def approve_tool_call_sync(self, **kwargs: Any) -> GenerateResult:
        """`approve_tool_call` for scripts and notebooks."""
        return run_sync(self.approve_tool_call(**kwargs))

    def decline_tool_call_sync(self, **kwargs: Any) -> GenerateResult:
        """`decline_tool_call` for scripts and notebooks."""
        return run_sync(self.decline_tool_call(**kwargs))

    def resume_generate_sync(self, resume_data: Any, **kwargs: Any) -> GenerateResult:
        """`resume_generate` for scripts and notebooks."""
        return run_sync(self.resume_generate(resume_data, **kwargs))

    def stream_sync(self, prompt: Any, **options: Any) -> Any:
        """`stream` for scripts and notebooks: an iterator of full-stream chunks."""
        return stream_sync(self, prompt, **options)


_VARIANTS = 32
