"""Compaction (SPEC §25): an agent's model input kept under `max_tokens` by one summary
of its older turns.

Before a model call the call's input is counted: system prompt, the context a subagent
inherits, the agent's conversation. When it would exceed `max_tokens`, everything but
the last `keep_last` messages (more when a tool call and its results would otherwise be
split) is replaced *in the model's input* by one summary message, written by the
summariser model from the earlier summary (if any) and the messages after it. The
thread keeps every original message; the summary sits beside them as a record
(`{"summary", "upto": id of the last message it covers, "count": messages of the input
it covers}`) written with the same node update as the model's turn, so it is
checkpointed with that step: it survives a crash and every later call reuses it until
the input outgrows `max_tokens` again.

Where the record lives: the `compaction` channel of the agent's graph state (a
supervisor, a subagent run as a subgraph, a background task), which only agents that
compact have; for a subagent whose loop runs inside its parent's node (nodes/turn/leaf.py),
the delegation thread, saved with its journal. The channel is a `DeltaChannel`, like the
messages: a sqlite checkpoint holds the value of every plain channel, so a plain one
would store the summary again at every later step. A subagent of a compacted agent
inherits the summary, not the turns it covers.

Counting (nodes/steps/tokens.py): the model's own counter where it has one that works, else 4
characters a token. A call that fits pays a few list operations on the messages added
since the previous call: no model call, no write, no copy of the conversation.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.constants import TAG_NOSTREAM
from langgraph.errors import GraphBubbleUp
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from supervisor_graph.checkpointers.compat import DeltaChannel
from supervisor_graph.checkpointers.delta_cache import DELTA_REDUCERS
from supervisor_graph.nodes.errors import ModelCallError
from supervisor_graph.nodes.observability.events import Emitter
from supervisor_graph.nodes.state import SNAPSHOT_EVERY
from supervisor_graph.nodes.steps.protocol import ModelHandler, ModelRequest, Step
from supervisor_graph.nodes.steps.tokens import Tally, counter_for, exact_tally, tally
from supervisor_graph.nodes.text import text_of

if TYPE_CHECKING:
    from supervisor_graph.nodes.spec import AgentSpec

__all__ = [
    "compactor_of",
    "COMPACTION_KEY",
    "SUMMARY_KWARG",
    "CompactionSettings",
    "Compactor",
    "choose_cut",
    "Compaction",
    "summarised",
    "with_compaction",
]

log = logging.getLogger("supervisor_graph")

# the state key of the record, and the mark of the summary message in a model input
COMPACTION_KEY = "compaction"
SUMMARY_KWARG = "supervisor_graph_summary"
SUMMARY_HEADER = "[Summary of the earlier conversation]"
SUMMARY_INSTRUCTIONS = (
    "You condense a conversation so that an assistant can continue it without the original messages. "
    "Write a summary of the conversation below that keeps what the user asked for, every fact, name, number "
    "and decision, what tools were called and what they returned, and what is still open. Write it as "
    "compact notes of at most {words} words, and reply with the summary only."
)


class CompactionSettings(BaseModel):
    """`Agent(compaction={"max_tokens": 8000, "keep_last": 6, "model": None})` (`True`: these defaults)."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True, frozen=True)

    max_tokens: int = Field(default=8000, ge=1, strict=True, description="The most tokens a model input may have.")
    keep_last: int = Field(default=6, ge=0, strict=True, description="The fewest recent messages kept as they are.")
    model: str | BaseChatModel | None = Field(default=None, description="The summariser; None: the agent's own model.")

    @model_validator(mode="before")
    @classmethod
    def _defaults(cls, value: Any) -> Any:
        return {} if value is True else value

    @field_validator("model")
    @classmethod
    def _model_string(cls, value: Any) -> Any:
        if isinstance(value, str) and "/" not in value.strip("/"):
            raise ValueError(f"model must be a 'provider/model' string or a BaseChatModel, not {value!r}")
        return value


# -- the state key ------------------------------------------------------------------------


def _last_record(current: Any, writes: list[Any]) -> Any:
    """The channel's reducer: the newest record wins (batching-invariant, as a
    `DeltaChannel` needs)."""
    return writes[-1] if writes else current


# the history cache (checkpointers/delta_cache.py) replays the channel with the messages
DELTA_REDUCERS[COMPACTION_KEY] = _last_record
_STATES: dict[type, type] = {}


def with_compaction(schema: type, compactor: Compactor | None) -> type:
    """The graph state `schema` of an agent, with the `compaction` channel when it compacts
    (an agent that does not has no such channel: nothing changes for it)."""
    if compactor is None:
        return schema
    known = _STATES.get(schema)
    if known is None:

        class CompactionState(schema, total=False):  # type: ignore[misc,valid-type,call-arg]
            compaction: Annotated[dict[str, Any], DeltaChannel(_last_record, snapshot_frequency=SNAPSHOT_EVERY)]

        known = _STATES[schema] = CompactionState
    return known


# -- where to cut -----------------------------------------------------------------------


def _at(context: Sequence[BaseMessage], history: Sequence[BaseMessage], i: int) -> BaseMessage:
    """Message `i` of the model's input after the system prompt: the context, then the history."""
    return context[i] if i < len(context) else history[i - len(context)]


def _covered(record: Any, context: Sequence[BaseMessage], history: Sequence[BaseMessage]) -> int:
    """How many of the input's messages `record` summarises (0: no record applies)."""
    if not isinstance(record, dict) or not record.get("upto"):
        return 0
    upto, count, n = record["upto"], record.get("count"), len(context) + len(history)
    if isinstance(count, int) and 0 < count <= n and _at(context, history, count - 1).id == upto:
        return count
    for i in range(n - 1, -1, -1):  # the input changed shape (a subagent's context grew)
        if _at(context, history, i).id == upto:
            return i + 1
    return 0


def choose_cut(context: Sequence[BaseMessage], history: Sequence[BaseMessage], keep_last: int, floor: int = 0) -> int:
    """How many leading messages of the input to summarise: all but the last `keep_last`,
    fewer when a kept tool result's call would be summarised (or a call's results split),
    never fewer than `floor` (those are summarised already)."""
    n = len(context) + len(history)
    cut = n - keep_last
    while cut > floor:
        call_at = _split(context, history, cut, n)
        if call_at is None:
            break
        cut = call_at
    return max(cut, floor)


def _split(context: Sequence[BaseMessage], history: Sequence[BaseMessage], cut: int, n: int) -> int | None:
    """The index of the AI message before `cut` whose call a result after it answers."""
    kept: set[str] = set()
    for i in range(cut, n):
        message = _at(context, history, i)
        if isinstance(message, AIMessage):
            kept.update(str(call["id"]) for call in message.tool_calls if call.get("id"))
        elif isinstance(message, ToolMessage) and message.tool_call_id not in kept:
            for j in range(cut - 1, -1, -1):
                earlier = _at(context, history, j)
                if isinstance(earlier, AIMessage) and any(
                    c.get("id") == message.tool_call_id for c in earlier.tool_calls
                ):
                    return j
    return None


# -- the summary ------------------------------------------------------------------------


def _summary_message(record: dict[str, Any]) -> HumanMessage:
    return HumanMessage(
        content=f"{SUMMARY_HEADER}\n{record['summary']}",
        id=f"summary-{record['upto']}",
        additional_kwargs={SUMMARY_KWARG: True},
    )


def _view(
    context: Sequence[BaseMessage], history: Sequence[BaseMessage], cut: int, summary: BaseMessage
) -> tuple[list[BaseMessage], Sequence[BaseMessage]]:
    """(context, history) of the model input with the first `cut` messages replaced by `summary`."""
    if cut <= len(context):
        return [summary, *context[cut:]], history
    return [summary], history[cut - len(context) :]


def summarised(messages: list[BaseMessage], record: Any) -> list[BaseMessage]:
    """`messages` (an agent's context and conversation) as its model saw them: the part
    `record` covers replaced by its summary (what a subagent of a compacted agent inherits)."""
    cut = _covered(record, (), messages) if record else 0
    return [_summary_message(record), *messages[cut:]] if cut else messages


def _transcript(previous: str | None, messages: Sequence[BaseMessage], cap: int) -> str:
    parts = [f"Summary so far:\n{previous}\n\nThe conversation went on:"] if previous else []
    for message in messages:
        text = text_of(message)
        if len(text) > cap:
            text = text[:cap] + " [...]"
        if isinstance(message, AIMessage):
            who = "Assistant"
            text += "".join(
                f"\n[called {c['name']} {json.dumps(c['args'], default=str)[:cap]}]" for c in message.tool_calls
            )
        elif isinstance(message, ToolMessage):
            who = f"Result of {message.name or message.tool_call_id}"
        elif isinstance(message, HumanMessage):
            who = "Earlier summary" if message.additional_kwargs.get(SUMMARY_KWARG) else "User"
        else:
            who = message.type.capitalize()
        parts.append(f"{who}: {text}")
    return "\n\n".join(parts)


def _quiet(config: RunnableConfig) -> RunnableConfig:
    """The summariser's config: traced as its own run, never streamed as the agent's text."""
    return {**config, "run_name": "compaction", "tags": [*(config.get("tags") or []), TAG_NOSTREAM]}


# in this process, the summaries just written, so that a node retried after its model call
# failed (or re-run before its step was saved) does not summarise the same turns again
_RECENT: dict[tuple[str, str, str], dict[str, Any]] = {}


@dataclass(slots=True)
class Compactor:
    """One agent's compaction: its settings and its summariser (a chat model, a
    no-argument factory of one, or None for the agent's own model)."""

    settings: CompactionSettings
    agent_id: str
    summariser: BaseChatModel | Callable[[], Any] | None = None

    async def fit(
        self,
        model: Any,
        system: str,
        context: Sequence[BaseMessage],
        history: Sequence[BaseMessage],
        record: Any,
        config: RunnableConfig,
        emit: Emitter,
    ) -> tuple[Sequence[BaseMessage], Sequence[BaseMessage], dict[str, Any] | None]:
        """The (context, history) to send, and the new record when this call compacted."""
        limit = self.settings.max_tokens
        counter = counter_for(model)
        ctx, hist = tally(counter, context), tally(counter, history)
        covered = _covered(record, context, history) if record else 0
        if not covered:
            if await counter.text(system, False) + ctx.total + hist.total <= limit:
                return context, history, None  # the common call: it fits
            shown: Any = None
        else:
            shown = _summary_message(record)
            quick = await counter.text(system, False) + await counter.text(shown.content, False)
            if quick + _after(ctx, hist, covered, len(context)) <= limit:
                return (*_view(context, history, covered, shown), None)
        ctx, hist = await exact_tally(ctx, context), await exact_tally(hist, history)
        fixed = await counter.text(system, True)
        before = fixed + _after(ctx, hist, covered, len(context))
        if shown is not None:
            before += await counter.text(shown.content, True)
        cut = choose_cut(context, history, self.settings.keep_last, covered) if before > limit else covered
        if cut <= covered:  # it fits, or nothing more may be summarised: the input as it stands
            return (*_view(context, history, covered, shown), None) if covered else (context, history, None)
        new = await self._summary(model, record if covered else None, context, history, covered, cut, config)
        summary = _summary_message(new)
        if emit.active:
            after = fixed + await counter.text(str(summary.content), True) + _after(ctx, hist, cut, len(context))
            payload = {
                "tokens_before": before,
                "tokens_after": after,
                "summarized_messages": cut,
                "usage": new["usage"],
            }
            emit("compaction", payload)
        return (*_view(context, history, cut, summary), new)

    async def _summary(
        self,
        model: Any,
        previous: dict[str, Any] | None,
        context: Sequence[BaseMessage],
        history: Sequence[BaseMessage],
        start: int,
        cut: int,
        config: RunnableConfig,
    ) -> dict[str, Any]:
        last = _at(context, history, cut - 1)
        if last.id is None:  # a message not stored yet (a subagent's tool result): the id it will be stored with
            last.id = str(uuid.uuid4())
        upto = last.id
        key = (self.agent_id, previous["upto"] if previous else "", upto)
        known = _RECENT.get(key)
        if known is not None:
            return known
        summariser = self.summariser
        if summariser is None:
            summariser = getattr(model, "bound", model)  # the agent's model, without its tools
        elif not isinstance(summariser, BaseChatModel):
            summariser = summariser()
        limit = self.settings.max_tokens
        covered = [_at(context, history, i) for i in range(start, cut)]
        prompt = [
            SystemMessage(content=SUMMARY_INSTRUCTIONS.format(words=max(50, limit // 6))),
            HumanMessage(content=_transcript(previous["summary"] if previous else None, covered, max(1000, limit))),
        ]
        try:
            response = await summariser.ainvoke(prompt, _quiet(config))
        except GraphBubbleUp:
            raise
        except Exception as exc:  # noqa: BLE001 - provider text must not reach the checkpoint
            log.debug("summariser of %r failed", self.agent_id, exc_info=exc)
            raise ModelCallError(self.agent_id, exc) from exc
        usage = getattr(response, "usage_metadata", None)
        record = {
            "summary": text_of(response).strip(),
            "upto": upto,
            "count": cut,
            "usage": dict(usage) if usage else None,
        }
        if len(_RECENT) >= 256:
            _RECENT.clear()
        _RECENT[key] = record
        return record


def _after(ctx: Tally, hist: Tally, start: int, context_length: int) -> int:
    """Tokens of the input's messages from `start` on (context first, then history)."""
    if start <= context_length:
        return ctx.after(start) + hist.total
    return hist.after(start - context_length)


class Compaction(Step):
    """The step that keeps an agent's model input under its size: older turns are
    summarised once, the summary stored with the turn (`compaction`) and shown in their
    place from then on; the summariser's usage counts against budgets."""

    name = "compaction"
    state_keys = {COMPACTION_KEY: dict[str, Any]}

    def __init__(self, compactor: Compactor) -> None:
        self.compactor = compactor


    async def awrap_model_call(self, request: ModelRequest, handler: ModelHandler) -> Any:
        context, shown, record = await self.compactor.fit(
            request.model, request.system, request.context, request.messages,
            request.state.get(COMPACTION_KEY), request.config, request.emit,
        )  # fmt: skip
        if record is not None:  # a new summary: checkpointed with this step, never made again
            request.updates[COMPACTION_KEY] = record
            request.spent.append(record["usage"])
        if context is request.context and shown is request.messages:
            return await handler(request)
        return await handler(request.override(context=context, messages=shown))


def compactor_of(spec: AgentSpec) -> Compactor | None:
    """The agent's compaction (`Agent(compaction=...)`), if it has one."""
    step = spec.steps.find(Compaction)
    return step.compactor if step is not None else None
