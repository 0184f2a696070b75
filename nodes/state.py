"""The graph state every supervisor (and every subagent, recursively) runs on.

Only what must survive a restart lives here. `messages` is a `DeltaChannel`: each
checkpoint stores the messages written in that step, not the whole list, so storage
grows linearly with the conversation instead of quadratically.

Per-run figures (iteration count, usage) are *derived* from the messages of the
current run instead of being stored and reset, which keeps them right across a pause
and resume and under LangGraph Studio, where callers send only `messages`.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from operator import attrgetter
from typing import Annotated, Any

from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from langgraph.graph.message import add_messages
from pydantic import BaseModel, PrivateAttr, SerializerFunctionWrapHandler, model_serializer
from typing_extensions import TypedDict

from supervisor_graph.checkpointers.compat import DeltaChannel
from supervisor_graph.checkpointers.delta_cache import DELTA_REDUCERS
from supervisor_graph.nodes.turn.prefix_cache import PrefixCache

__all__ = [
    "FEEDBACK_MARK",
    "NOTICE_NAME",
    "SupervisorInput",
    "SupervisorState",
    "Usage",
    "USAGE_BY_AGENT_KEY",
    "UsageCounts",
    "add_usage",
    "feedback_message",
    "notice_message",
    "is_run_input",
    "run_start",
    "usage_by_agent_of_run",
    "usage_of_run",
    "usage_total",
    "zero_usage",
]

# Marks messages the library adds on a run's behalf (feedback), so they do not count
# as the start of a new run.
FEEDBACK_MARK = "supervisor_graph_feedback"


_ID = attrgetter("id")
# ids of each conversation's messages, extended as it grows: the append check would
# otherwise read every id of the conversation at every step
_IDS: PrefixCache[set[Any]] = PrefixCache()


def _ids_of(messages: list[AnyMessage], hit: tuple[int, set[Any]] | None) -> set[Any]:
    """The ids in `messages` (`hit`: what `_IDS` holds for them), a set the caller may
    extend (it owns it from now on)."""
    if hit is None:
        return set(map(_ID, messages))
    n, known = hit
    if n < len(messages):
        known.update(map(_ID, messages[n:]))
    return known


_DUMPED: dict[str, type[BaseMessage]] = {"ai": AIMessage, "human": HumanMessage, "tool": ToolMessage, "system": SystemMessage}


def _from_dump(message: Any) -> Any:
    """A message stored as its field dict (LangGraph API servers read checkpoints back
    that way) as the message itself: `add_messages` would file fields it does not know,
    such as `usage_metadata`, under `additional_kwargs`."""
    if isinstance(message, dict) and "content" in message:
        cls = _DUMPED.get(str(message.get("type")))
        if cls is not None:
            try:
                return cls.model_validate(message)
            except ValueError:
                return message
    return message


def _replayed(current: list[AnyMessage], flat: list[Any]) -> list[AnyMessage] | None:
    """The conversation this reducer already merged, when `current` + `flat` replay it
    exactly (the history cache folds a thread's writes onto the value it loaded last
    turn): a copy of it, without reading every id again."""
    entry = _IDS.covering(current)
    if entry is None:
        return None
    covered, known = entry
    if len(current) + len(flat) != len(covered) or covered[len(current) :] != flat:
        return None
    merged: list[AnyMessage] = list(covered)  # type: ignore[arg-type]
    _IDS.put(merged, len(merged), known)
    return merged


def _add_message_batches(current: list[AnyMessage], batches: Sequence[Any]) -> list[AnyMessage]:
    """`add_messages` over every batch of a step (or of a thread's replay) at once.

    The common case, new messages with fresh ids, is a plain append; anything else
    (removals, replacements by id, message-like dicts or tuples) goes through
    `add_messages` with its full semantics.
    """
    flat: list[Any] = []
    for batch in batches:
        if isinstance(batch, list):
            flat.extend(batch)
        else:
            flat.append(batch)
    if any(isinstance(m, dict) for m in flat):
        flat = [_from_dump(m) for m in flat]
    # a list this reducer merged holds no dicts: only what was added since is looked at
    hit = _IDS.get(current)
    # (a prefix of what the reducer merged holds no dicts either)
    if hit is None and flat and (replayed := _replayed(current, flat)) is not None:
        return replayed
    if any(isinstance(m, dict) for m in (current[hit[0] :] if hit is not None else current)):
        current = [_from_dump(m) for m in current]
        hit = None
    if all(type(m) is not RemoveMessage and isinstance(m, BaseMessage) for m in flat):
        for message in flat:
            if message.id is None:
                message.id = str(uuid.uuid4())
        ids = {m.id for m in flat}
        if len(ids) == len(flat):
            known = _ids_of(current, hit)
            if known.isdisjoint(ids):
                merged = [*current, *flat]
                known.update(ids)
                _IDS.put(merged, len(merged), known)
                return merged
    return add_messages(current, flat)  # type: ignore[arg-type,return-value]


def _append(current: list[str] | None, more: list[str] | None) -> list[str]:
    return [*(current or []), *(more or [])]


def _either(current: bool | None, more: bool | None) -> bool:
    return bool(current) or bool(more)


# A full copy of the messages is stored every SNAPSHOT_EVERY writes to them (about 4 per
# turn). Each copy is as big as the conversation, so frequent copies make storage grow
# quadratically; loading replays the writes since the last copy, which this process's
# history cache (checkpointers.delta_cache) mostly spares.
SNAPSHOT_EVERY = 1000
# The history cache folds the messages a thread has replayed into one value with the
# channel's own reducer, so a turn replays only what was written since the last one.
DELTA_REDUCERS["messages"] = _add_message_batches


class SupervisorInput(TypedDict):
    """What a caller sends: new messages (LangGraph Studio's input form, `.as_tool()`)."""

    messages: Annotated[list[AnyMessage], DeltaChannel(_add_message_batches, snapshot_frequency=SNAPSHOT_EVERY)]


class SupervisorState(TypedDict, total=False):
    """State of one agent's graph."""

    messages: Annotated[list[AnyMessage], DeltaChannel(_add_message_batches, snapshot_frequency=SNAPSHOT_EVERY)]
    # How the last run ended (written by whichever node ends it).
    finish_reason: str | None
    # Feedback from hooks waiting for the next supervisor turn (it cannot be added
    # while tool results are still owed to the last AI message).
    feedback: Annotated[list[str], _append]
    # Set by `bail()` in any concurrent `on_delegation_complete`.
    bail: Annotated[bool, _either]
    # Iteration after which this run stops (`on_iteration_complete` said stop).
    stop_at: int | None
    # The last run's answer as the JSON value of its output schema (SPEC §28), as
    # LangChain's `create_agent` names it; None when the run had no schema.
    structured_response: Any
    # Why the last run's answer has no value: the schema, field errors and raw text.
    structured_output_error: dict[str, Any] | None
    # Which guard stopped the last run (SPEC §30): `Tripwire` as a dict, written only by
    # a run that ends `finish_reason "tripwire"`
    tripwire: dict[str, Any] | None
    # An answer a guard escalated, held out of `messages` until a person decides
    guard_held: dict[str, Any] | None


UsageCounts = dict[str, int]


# the input tokens a provider's prompt cache read and wrote (SPEC §33), part of `input_tokens`
CACHE_KEYS = ("cache_read_tokens", "cache_creation_tokens")


class Usage(BaseModel):
    """Token usage summed over model calls (a run's, or one delegation's), subagents' included;
    of the input, what the provider's prompt cache read and wrote (SPEC §33)."""

    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    cache_read_tokens: int = 0
    cache_creation_tokens: int = 0

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # a run its providers cached nothing of reports as before caching was counted
        data: dict[str, Any] = handler(self)
        for key in CACHE_KEYS:
            if not data.get(key):
                data.pop(key, None)
        return data

    # what `cost` is: a figure, or what prices it when first read (SPEC §33: unused is free)
    _cost: Any = PrivateAttr(default=None)

    @property
    def cost(self) -> float | None:
        """What these tokens cost in USD, from a maintained price table (SPEC §33); None
        when a model among them has no price there, or when nothing priced them. Priced
        when first read, so it is no field: dumps and stream payloads leave it out."""
        if callable(self._cost):
            self._cost = self._cost()
        return self._cost  # type: ignore[no-any-return]

    def priced(self, cost: float | Callable[[], float | None] | None) -> Usage:
        """This usage with its cost: a figure, or a function that prices it when first read."""
        self._cost = cost
        return self

    def __eq__(self, other: object) -> bool:
        # the counts: what prices them is not part of them
        return self.__dict__ == other.__dict__ if isinstance(other, Usage) else NotImplemented


def feedback_message(text: str, source: str) -> HumanMessage:
    return HumanMessage(content=text, additional_kwargs={FEEDBACK_MARK: source})


NOTICE_NAME = "supervisor_graph_notice"
"""The `name` of the message after the conversation that says what holds for one call
(a working memory's value, a budget notice): providers that take names (OpenAI) see it
on the wire, so a fake server or a log can tell it from the user's own words."""


def notice_message(text: str) -> HumanMessage:
    """What the steps say for one model call, after the conversation (never a run input)."""
    return HumanMessage(content=text, name=NOTICE_NAME, additional_kwargs={FEEDBACK_MARK: "notice"})


def zero_usage() -> UsageCounts:
    return {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}


def add_usage(total: UsageCounts, more: Any) -> UsageCounts:
    if not more:
        return total
    get = more.get
    total["input_tokens"] += int(get("input_tokens", 0) or 0)
    total["output_tokens"] += int(get("output_tokens", 0) or 0)
    total["total_tokens"] += int(get("total_tokens", 0) or 0)
    details = get("input_token_details")
    if details:  # LangChain's usage of one call
        read = details.get("cache_read")
        # langchain-anthropic counts a write by its lifetime when Anthropic says which
        written = details.get("cache_creation") or (details.get("ephemeral_5m_input_tokens") or 0) + (
            details.get("ephemeral_1h_input_tokens") or 0
        )
    else:  # counts of ours (a subagent's, a delegation's)
        read, written = get("cache_read_tokens"), get("cache_creation_tokens")
    if read:  # the keys only once a cache was used: counts stay as they were without one
        total["cache_read_tokens"] = total.get("cache_read_tokens", 0) + int(read)
    if written:
        total["cache_creation_tokens"] = total.get("cache_creation_tokens", 0) + int(written)
    return total


def is_run_input(message: BaseMessage) -> bool:
    """A user message that starts a run (library-added feedback does not)."""
    return isinstance(message, HumanMessage) and FEEDBACK_MARK not in message.additional_kwargs


def run_start(messages: Sequence[BaseMessage]) -> int:
    """Index of the current run's input message (0 when there is none)."""
    for i in range(len(messages) - 1, -1, -1):
        if is_run_input(messages[i]):
            return i
    return 0


def usage_of_run(messages: Sequence[BaseMessage], start: int) -> UsageCounts:
    """Usage of every model call since `start`, subagents' included.

    A delegation's tool message carries its subagent run's total in its artifact.
    """
    total = zero_usage()
    for message in messages[start:]:
        if isinstance(message, AIMessage):
            add_usage(total, message.usage_metadata)
        elif isinstance(message, ToolMessage) and isinstance(message.artifact, dict):
            add_usage(total, message.artifact.get("usage"))
    return total


def usage_total(by_agent: dict[str, UsageCounts]) -> UsageCounts:
    """The sum of a breakdown `usage_by_agent_of_run` gave: the same total `usage_of_run`
    finds over those messages, without a second pass over them."""
    total = zero_usage()
    for counts in by_agent.values():
        add_usage(total, counts)
    return total


# The artifact key under which a delegation's tool message carries its subagent's usage
# by agent (paths relative to the parent, starting with the subagent's id): the parent
# then reads the whole tree's breakdown from its own checkpointed messages.
USAGE_BY_AGENT_KEY = "usage_by_agent"


def usage_by_agent_of_run(messages: Sequence[BaseMessage], start: int, agent_id: str) -> dict[str, UsageCounts]:
    """Each agent's own usage since `start`, keyed by its path from this run's agent
    (`agent_id`, `agent_id/<subagent id>`, ...), always with an entry for `agent_id`.

    It reads exactly the figures `usage_of_run` adds up, so the entries sum to its total:
    a delegation's tool message carries its subagent's breakdown in its artifact; one
    without (a remote subagent, a checkpoint from before the breakdown) counts whole
    under the subagent's id. Indexes instead of slicing: no copy of the conversation.
    """
    own = zero_usage()
    out: dict[str, UsageCounts] = {agent_id: own}
    for i in range(start, len(messages)):
        message = messages[i]
        if isinstance(message, AIMessage):
            add_usage(own, message.usage_metadata)
        elif isinstance(message, ToolMessage) and isinstance(message.artifact, dict):
            artifact = message.artifact
            nested = artifact.get(USAGE_BY_AGENT_KEY)
            if isinstance(nested, dict) and nested:
                for path, usage in nested.items():
                    add_usage(out.setdefault(f"{agent_id}/{path}", zero_usage()), usage)
            elif artifact.get("usage"):
                # any other tool message `usage_of_run` counts: under the agent it names, else this one
                sub = artifact.get("agent_id")
                add_usage(out.setdefault(f"{agent_id}/{sub}" if sub else agent_id, zero_usage()), artifact["usage"])
    return out
