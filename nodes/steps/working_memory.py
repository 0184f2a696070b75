"""Working memory (SPEC §8): one persistent scratchpad per agent.

The model reads how to use it in its system prompt and the current value after the
conversation (so an update changes no byte before it), and changes it with the
`update_working_memory` tool. The supervisor node answers that tool itself, in the
same step as the model's turn: an update is a write, not a delegation, so it costs no
extra super-step, adds no iteration and never reaches the tools node.

Where the value lives:
- thread scope: the `working_memory` channel of the agent's graph state (checkpointed
  with the thread; a subagent's lives in its delegation thread);
- resource scope: the run's LangGraph store, under (`WORKING_MEMORY_NAMESPACE`,
  `[agent id, resource id]`), so it outlives threads;
- a run without a thread (no `memory`, or a graph driven without a checkpointer): the
  run's own scratch space, gone when the run ends.
"""

from __future__ import annotations

import json
import logging
import types
import typing
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, Literal

from langchain_core.messages import AIMessage, ToolCall, ToolMessage
from langgraph.store.base import BaseStore
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic.fields import FieldInfo

from supervisor_graph.nodes.options import RunHandle
from supervisor_graph.nodes.state import SupervisorInput, SupervisorState
from supervisor_graph.nodes.steps.protocol import Answered, ModelHandler, ModelRequest, Step

if TYPE_CHECKING:
    from supervisor_graph.nodes.spec import AgentSpec

__all__ = [
    "working_memory_of",
    "DEFAULT_TEMPLATE",
    "MAX_WORKING_MEMORY_BYTES",
    "WORKING_MEMORY_NAMESPACE",
    "WORKING_MEMORY_TOOL",
    "WorkingMemory",
    "WorkingMemoryError",
    "WorkingMemoryInput",
    "WorkingMemoryState",
    "WorkingMemoryStep",
    "apply_update",
    "deep_merge",
    "is_update_turn",
    "read_value",
    "resource_of",
    "store_key",
    "update_result",
    "write_value",
]

log = logging.getLogger("supervisor_graph")

WORKING_MEMORY_TOOL = "update_working_memory"
WORKING_MEMORY_NAMESPACE = ("supervisor_graph", "working_memory")
# the largest value kept (serialized, UTF-8): it is in every model call's system prompt
# and in every store read (SPEC §19 "Serving safely"); `WorkingMemory(max_bytes=...)`
MAX_WORKING_MEMORY_BYTES = 64 * 1024

DEFAULT_TEMPLATE = """# User
- Name:
- Preferences:

# Task
- Goal:
- Decisions so far:
- Open questions:
"""


def _keep_last(current: Any, new: Any) -> Any:
    return new


class WorkingMemoryState(SupervisorState, total=False):
    """State of an agent with thread-scoped working memory."""

    working_memory: Annotated[Any, _keep_last]


class WorkingMemoryInput(SupervisorInput, total=False):
    """Input of such an agent: Studio's form may set the working memory too."""

    working_memory: Annotated[Any, _keep_last]


class WorkingMemoryError(ValueError):
    """A working-memory value or update that does not fit the agent's template or schema."""


class WorkingMemory(BaseModel):
    """`Agent(working_memory=...)`: the agent's scratchpad.

    `scope="resource"` (default) keeps one value per agent and resource (user), across
    threads; `"thread"` one per conversation. Either `template` (markdown the model
    rewrites whole; a short outline by default) or `schema` (a pydantic model class:
    the model sends fields to change, deep-merged, `null` deleting a key; keys the schema
    does not know are refused unless it allows extra keys). `max_bytes` caps the value,
    serialized (the text's UTF-8 bytes, or the object's JSON): 64 kB by default.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, arbitrary_types_allowed=True)

    scope: Literal["resource", "thread"] = "resource"
    template: str | None = None
    schema_: type[BaseModel] | None = Field(default=None, alias="schema")
    max_bytes: int = Field(default=MAX_WORKING_MEMORY_BYTES, ge=1, strict=True)

    @model_validator(mode="after")
    def _one_mode(self) -> WorkingMemory:
        if self.schema_ is not None and self.template is not None:
            raise ValueError("working_memory takes a template or a schema, not both")
        if self.schema_ is not None and not (isinstance(self.schema_, type) and issubclass(self.schema_, BaseModel)):
            raise ValueError("working_memory schema must be a pydantic model class")
        return self

    @property
    def structured(self) -> bool:
        return self.schema_ is not None

    def empty_view(self) -> str:
        return "{}" if self.schema_ is not None else (self.template if self.template is not None else DEFAULT_TEMPLATE)

    # -- values -----------------------------------------------------------------

    def validate_value(self, value: Any, *, known_keys: bool = True) -> Any:
        """`value` as stored: a string in template mode, a JSON object in schema mode.
        `known_keys=False` leaves out the unknown-key check (a merged value whose stored
        part predates a schema change; its update was checked on its own)."""
        if self.schema_ is None:
            if not isinstance(value, str):
                raise WorkingMemoryError(f"working memory is markdown text here; got {type(value).__name__}, not a string")
            self._check_size(len(value.encode("utf-8")))
            return value
        if isinstance(value, BaseModel):
            value = value.model_dump(mode="json", exclude_unset=True)
        if not isinstance(value, Mapping):
            raise WorkingMemoryError(f"working memory is an object here; got {type(value).__name__}")
        if known_keys:
            self.check_known_keys(value)
        try:
            checked = self.schema_.model_validate(dict(value))
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'memory'}: {e['msg']}" for e in exc.errors())
            raise WorkingMemoryError(f"working memory does not match {self.schema_.__name__}: {problems}") from None
        stored = checked.model_dump(mode="json", exclude_unset=True)
        self._check_size(len(json.dumps(stored, ensure_ascii=False).encode("utf-8")))
        return stored

    def check_known_keys(self, value: Mapping[str, Any]) -> None:
        """Refuse keys `value` holds that the schema does not know (pydantic would drop
        them silently, so a write would lose them without a word)."""
        assert self.schema_ is not None
        unknown = _unknown_keys(self.schema_, value, "")
        if unknown:
            known = ", ".join(self.schema_.model_fields) or "none"
            raise WorkingMemoryError(
                f"working memory has no field {', '.join(unknown)} ({self.schema_.__name__} fields: {known})"
            )

    def _check_size(self, size: int) -> None:
        if size > self.max_bytes:
            raise WorkingMemoryError(
                f"working memory would be {size:,} bytes serialized; the limit is {self.max_bytes:,} bytes "
                "(WorkingMemory(max_bytes=...)): keep it shorter"
            )

    def render(self, value: Any) -> str:
        """What the model reads of it on every call: the guide, then the value."""
        return f"{self.guide()}\n{self.block(value)}"

    def guide(self) -> str:
        """How to use it, in the system prompt: the same on every call."""
        where = "every conversation with this user" if self.scope == "resource" else "this conversation"
        if self.schema_ is None:
            how = "pass the whole updated text, in the same format: it replaces what is there"
        else:
            how = "pass only the fields to change: they are merged into what is there, and null deletes a field"
        return (
            f"You have a working memory that persists across {where}: the <working_memory> block after the "
            f"conversation. Keep it current with the {WORKING_MEMORY_TOOL} tool whenever you learn something worth "
            f"remembering ({how}). Do not tell the user about it."
        )

    def block(self, value: Any) -> str:
        """Its value, after the conversation: an update changes no byte before it."""
        if self.schema_ is None:
            shown = value if isinstance(value, str) else self.empty_view()
        else:
            shown = json.dumps(value if value is not None else {}, ensure_ascii=False, indent=2)
        return f"<working_memory>\n{shown}\n</working_memory>"

    def tool_schema(self) -> dict[str, Any]:
        if self.schema_ is None:
            memory: dict[str, Any] = {
                "type": "string",
                "description": "The complete new working memory text (markdown), following the template.",
            }
            defs: dict[str, Any] = {}
        else:
            full = self.schema_.model_json_schema()
            defs = full.pop("$defs", {})
            memory = {
                "type": "object",
                "description": "Fields to change, merged into the working memory; null deletes a field.",
                "properties": full.get("properties", {}),
            }
        parameters: dict[str, Any] = {"type": "object", "properties": {"memory": memory}, "required": ["memory"]}
        if defs:
            parameters["$defs"] = defs
        return {
            "type": "function",
            "function": {
                "name": WORKING_MEMORY_TOOL,
                "description": "Update your working memory (what you keep across turns).",
                "parameters": parameters,
            },
        }


def _model_of(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model a field holds (`Model` or `Model | None`), else None."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        models = [m for m in (_model_of(a) for a in typing.get_args(annotation)) if m is not None]
        return models[0] if len(models) == 1 else None
    return None


def _unknown_keys(schema: type[BaseModel], value: Mapping[str, Any], prefix: str) -> list[str]:
    """Dotted paths of the keys in `value` that `schema` (and the models it nests) does
    not know; a model that allows extra keys knows every key."""
    if schema.model_config.get("extra") == "allow":
        return []
    fields: dict[str, FieldInfo] = {}
    for name, field in schema.model_fields.items():
        fields[name] = field
        for alias in (field.alias, field.validation_alias):
            if isinstance(alias, str):
                fields[alias] = field
    unknown: list[str] = []
    for key, item in value.items():
        known = fields.get(key)
        if known is None:
            unknown.append(f"{prefix}{key}")
            continue
        nested = _model_of(known.annotation)
        if nested is not None and isinstance(item, Mapping):
            unknown.extend(_unknown_keys(nested, item, f"{prefix}{key}."))
    return unknown


def deep_merge(base: Mapping[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    """`patch` merged into `base`: objects merge key by key, `None` deletes a key,
    anything else (lists included) replaces."""
    out = dict(base)
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = dict(value) if isinstance(value, Mapping) else value
    return out


def apply_update(config: WorkingMemory, current: Any, args: Any) -> Any:
    """The value after an `update_working_memory` call, or `WorkingMemoryError`."""
    if not isinstance(args, Mapping) or "memory" not in args:
        raise WorkingMemoryError(f"{WORKING_MEMORY_TOOL} takes one argument, memory")
    update = args["memory"]
    if config.schema_ is None:
        return config.validate_value(update)
    if isinstance(update, str):  # some models send the object as JSON text
        try:
            update = json.loads(update)
        except ValueError:
            raise WorkingMemoryError("memory must be an object of fields to change") from None
    if not isinstance(update, Mapping):
        raise WorkingMemoryError("memory must be an object of fields to change")
    config.check_known_keys(update)
    return config.validate_value(deep_merge(current if isinstance(current, Mapping) else {}, update), known_keys=False)


# -- where values live ------------------------------------------------------------


def store_key(agent_id: str, resource_id: str) -> str:
    """The store key of one agent's resource-scoped value (store namespace labels may
    not hold every character an id can, keys may)."""
    return json.dumps([agent_id, resource_id])


def resource_of(handle: RunHandle) -> str:
    """The resource a run's working memory belongs to: its resource id, else its thread."""
    return handle.resource_id or handle.thread_id or "default"


def _durable_store(store: BaseStore | None, handle: RunHandle) -> BaseStore | None:
    # a run without a thread keeps nothing: its value lives in the run's scratch space
    return store if handle.thread_id is not None else None


async def read_value(
    config: WorkingMemory, agent_id: str, state: Mapping[str, Any], store: BaseStore | None, handle: RunHandle
) -> Any:
    """The current value (`None` when nothing has been written)."""
    if config.scope == "thread":
        return state.get("working_memory")
    key = store_key(agent_id, resource_of(handle))
    durable = _durable_store(store, handle)
    if durable is None:
        return handle.scratch.get(key)
    item = await durable.aget(WORKING_MEMORY_NAMESPACE, key)
    return item.value.get("value") if item is not None else None


# agents already warned that their resource-scoped working memory has no store
_warned_storeless: set[str] = set()


async def write_value(
    config: WorkingMemory, agent_id: str, value: Any, store: BaseStore | None, handle: RunHandle
) -> dict[str, Any]:
    """Store `value`; returns the state update that goes with it (thread scope).

    Raises:
        WorkingMemoryError: resource scope on a thread of a graph compiled without a store
            (the value would be gone at the next run: refused, never reported as saved).
    """
    if config.scope == "thread":
        return {"working_memory": value}
    if store is None and handle.thread_id is not None:
        if agent_id not in _warned_storeless:
            _warned_storeless.add(agent_id)
            log.warning(
                "agent %r keeps resource-scoped working memory, but its graph has no store: updates are refused; "
                "compile it with compile(checkpointer=..., store=...) (LangGraph servers provide one)",
                agent_id,
            )
        raise WorkingMemoryError(
            "working memory cannot be saved here: this graph was compiled without a store (compile(store=...))"
        )
    key = store_key(agent_id, resource_of(handle))
    durable = _durable_store(store, handle)
    if durable is None:
        handle.scratch[key] = value
    else:
        await durable.aput(WORKING_MEMORY_NAMESPACE, key, {"value": value}, index=False)
    return {}


# -- the transcript ---------------------------------------------------------------


def is_update_turn(message: AIMessage) -> bool:
    """A model turn whose only tool calls update working memory."""
    calls = message.tool_calls
    return bool(calls) and all(call["name"] == WORKING_MEMORY_TOOL for call in calls)


def update_result(call: ToolCall, error: str | None = None) -> ToolMessage:
    if error is not None:
        return ToolMessage(
            content=f"Error: {error}. The working memory is unchanged.",
            tool_call_id=call["id"] or "",
            name=WORKING_MEMORY_TOOL,
            status="error",
        )
    return ToolMessage(content="Working memory updated.", tool_call_id=call["id"] or "", name=WORKING_MEMORY_TOOL)


class WorkingMemoryStep(Step):
    """Working memory as a step of the supervisor's turn (SPEC §8): its guide in the
    system prompt and its value after the conversation of each model call, its update
    tool offered, and the turn's update
    calls applied in order once the answer is accepted (a bad update changes nothing;
    a turn that only updates is no iteration)."""

    name = "working_memory"
    answers = free = frozenset({WORKING_MEMORY_TOOL})

    def __init__(self, memory: WorkingMemory, agent_id: str) -> None:
        self.memory, self.agent_id = memory, agent_id
        self.tools = (memory.tool_schema(),)

    async def _read(self, request: ModelRequest) -> Any:
        return await read_value(self.memory, self.agent_id, request.state, _store(request), request.handle)

    async def awrap_model_call(self, request: ModelRequest, handler: ModelHandler) -> Any:
        value = request.notes[self.name] = await self._read(request)  # what updates apply to: one read a call
        guide = self.memory.guide()
        system = f"{request.system}\n\n{guide}" if request.system else guide
        return await handler(request.override(system=system, tail=(*request.tail, self.memory.block(value))))

    async def aanswer_calls(self, request: ModelRequest, response: Any) -> Answered:
        store = _store(request)
        value = request.notes[self.name] if self.name in request.notes else await self._read(request)
        out = Answered(again=is_update_turn(response))  # not an iteration: no hook, no dispatch
        for call in response.tool_calls:
            if call["name"] != WORKING_MEMORY_TOOL:
                continue
            out.marks[call["id"] or ""] = {"working_memory": True}  # an update, not a tool a client shows
            try:
                updated = apply_update(self.memory, value, call["args"])
                out.updates.update(await write_value(self.memory, self.agent_id, updated, store, request.handle))
            except WorkingMemoryError as exc:
                out.results.append(result := update_result(call, str(exc)))
                out.events.append(("tool-error", _event(call, result, None)))
                continue
            value = updated
            out.results.append(result := update_result(call))
            # the new value, for the AG-UI bridge's shared state
            out.events.append(("tool-result", _event(call, result, {"scope": self.memory.scope, "value": value})))
        return out


def _store(request: ModelRequest) -> BaseStore | None:
    return request.runtime.store if request.runtime is not None else None


def _event(call: ToolCall, result: ToolMessage, memory: dict[str, Any] | None) -> dict[str, Any]:
    return {"tool_call_id": result.tool_call_id, "tool_name": WORKING_MEMORY_TOOL, "result": result.content, "working_memory": memory}


def working_memory_of(spec: AgentSpec) -> WorkingMemory | None:
    """The agent's working memory (`Agent(working_memory=...)` or its memory's), if any."""
    step = spec.steps.find(WorkingMemoryStep)
    return step.memory if step is not None else None
