"""Budgets (SPEC §25, §33): limits on the tokens, money, wall time and tool calls a run
may spend, checked before each model call.

A `budget=` call option covers the whole tree (the supervisor and every delegation,
nested and parallel); `Agent(budget=...)` covers each run of that agent (each call of a
top-level agent, each delegation to a subagent, its own delegations included);
`on_delegation_start` may replace a subagent's with `modified_budget`. Every budget in
force has a `BudgetMeter`, and an agent's run handle holds the meters that cover it in a
`BudgetScope`: its parent's (shared by reference, so parallel delegations count against
one figure) and its own. A run with no budget has no scope (`RunHandle.budget is None`):
each site below pays one test of None, no state, no checkpoint write, no copy.

What counts:
- tokens: the usage each model response reports (`usage_metadata["total_tokens"]`, input
  plus output), added to every meter of the agent that made the call as it arrives, so
  no message list is summed again; a remote subagent's usage when its delegation ends.
- cost: USD, each model call priced as it arrives by the model that answered (a guard's
  judge too; `nodes/observability/cost.py`), only in a scope with a cost limit
  (`BudgetScope.priced`): a budget without one prices nothing. A call whose model has no
  price (a local model, a test double, a remote subagent's total, a summary) cannot be
  counted: it counts nothing toward the cost limit, with one warning per model. Its
  tokens still count toward a `tokens` limit, the one to add beside `cost` for them.
- tool_calls: each of the agent's own tools that runs (after its approval); delegations
  and the library's own tools (working memory, background-task control) are not tool
  calls. A call beyond the limit does not run: its result is `[Budget exceeded]
  tool_calls`, so the limit holds exactly even for parallel calls.
- seconds: wall time from the start of the run the budget covers: the call (when the
  facade starts it, or when the first node of a graph run driven directly reads its
  options), a delegation (when its subagent node starts), a background task's try.
  Checked before model calls only (a slow model call or tool finishes). A pause is the
  end of a call: the call that resumes it starts its budgets afresh, so time spent
  waiting for an approval never counts.

The turn meters budgets through one step (`BudgetMeters`, which a run with a budget adds
to its agent's steps): it stops the agent before a model call, puts the notice into the
call's prompt, counts each answer's usage as it arrives (an answer a guard later keeps
out of the thread was billed all the same) and each tool call as it is about to run.

Before each model call: a budget at 100% of any limit stops the agent (`over_budget`:
a top-level run ends with finish reason "budget", a delegation's result becomes
`[Budget exceeded] <limit>`, every tool call of the transcript answered); a limit that
has reached 80% puts one line after the conversation of that agent's next model call
(`budget_notice`, the request's `tail`), once per budget and limit: what comes before it,
the system prompt and the conversation, stays the same bytes (a provider's prompt cache).

Background tasks run beyond the call that started them: a task has its subagent's own
budget only (from each try's start), never the call's.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from langchain_core.messages import AIMessage, ToolCall, ToolMessage
from pydantic import BaseModel, ConfigDict, Field

from supervisor_graph.nodes.delegation.result import DelegationRecord
from supervisor_graph.nodes.observability.cost import call_cost
from supervisor_graph.nodes.options import capability_option
from supervisor_graph.nodes.state import UsageCounts, add_usage, zero_usage
from supervisor_graph.nodes.steps.protocol import ModelHandler, ModelRequest, Step, ToolHandler, ToolRequest

if TYPE_CHECKING:
    from supervisor_graph.nodes.spec import AgentSpec

__all__ = [
    "METERS",
    "BudgetMeters",
    "AgentBudget",
    "budget_of",
    "BUDGET_EXCEEDED",
    "NOTICE_AT",
    "Budget",
    "BudgetMeter",
    "BudgetScope",
    "budget_notice",
    "child_budget",
    "exceeded_result",
    "open_budget",
    "over_budget",
    "own_budget",
    "restarted",
    "spend",
    "take_tool_call",
]

BUDGET_EXCEEDED = "[Budget exceeded]"
# share of a limit at which the agent is told to finish
NOTICE_AT = 0.8
# the limits in the order a stop names them (the first one used up)
_LIMITS = ("tokens", "tool_calls", "seconds", "cost")
_NAMES = {"tokens": "token budget", "tool_calls": "tool-call budget", "seconds": "time budget", "cost": "cost budget"}


class Budget(BaseModel):
    """`{"tokens": int, "seconds": float, "tool_calls": int, "cost": float}`, any of
    them; a limit left out is no limit. `cost` is in USD (SPEC §33).

    Example:
        >>> Budget.model_validate({"tokens": 10_000, "seconds": 60})
        Budget(tokens=10000, seconds=60.0, tool_calls=None, cost=None)
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    tokens: int | None = Field(default=None, ge=0, strict=True, description="Tokens (input + output) reported by the models.")
    seconds: float | None = Field(default=None, ge=0, description="Wall time from the start of the run it covers.")
    tool_calls: int | None = Field(default=None, ge=0, strict=True, description="Tool calls that run (not delegations).")
    cost: float | None = Field(default=None, ge=0, description="USD the model calls cost, priced by the models that answered.")

    @property
    def limited(self) -> bool:
        return self.tokens is not None or self.seconds is not None or self.tool_calls is not None or self.cost is not None


# `budget=` of a call (a `Budget` or its dict) and of a graph run's context
capability_option("budget", lambda value, _where: Budget.model_validate(value))


@dataclass(slots=True, eq=False)
class BudgetMeter:
    """One budget's counters, shared by every agent it covers."""

    limits: Budget
    started: float = field(default_factory=time.monotonic)
    usage: UsageCounts = field(default_factory=zero_usage)
    tool_calls: int = 0
    cost: float = 0.0  # USD, counted only under a cost limit

    def used(self, limit: str) -> float:
        if limit == "tokens":
            return self.usage["total_tokens"]
        if limit == "tool_calls":
            return self.tool_calls
        if limit == "cost":
            return self.cost
        return time.monotonic() - self.started

    def share(self, limit: str) -> float | None:
        """How much of `limit` is used (1.0: all of it), None when it is not limited."""
        cap = getattr(self.limits, limit)
        if cap is None:
            return None
        used = self.used(limit)
        return 1.0 if cap <= 0 else used / cap


@dataclass(slots=True, eq=False)
class BudgetScope:
    """The budgets one agent's run is under: the meters it inherits, then its own."""

    meters: tuple[BudgetMeter, ...]
    own: Budget | None = None
    # (meter index, limit) pairs this agent has been told about
    noticed: set[tuple[int, str]] = field(default_factory=set)
    # the limit that stopped this agent, once one did
    exceeded: str | None = None
    # a meter has a cost limit: each model call is priced as it arrives
    priced: bool = field(init=False)

    def __post_init__(self) -> None:
        self.priced = any(meter.limits.cost is not None for meter in self.meters)


def _budget(value: Budget | Mapping[str, Any] | None) -> Budget | None:
    if value is None or isinstance(value, Budget):
        return value if value is not None and value.limited else None
    budget = Budget.model_validate(value)
    return budget if budget.limited else None


def open_budget(call: Budget | None, own: Budget | None) -> BudgetScope | None:
    """The scope of a top-level run: the call's budget and the agent's own."""
    budgets = [b for b in (_budget(call), _budget(own)) if b is not None]
    if not budgets:
        return None
    return BudgetScope(tuple(BudgetMeter(b) for b in budgets), _budget(own))


def child_budget(
    parent: BudgetScope | None, modified: Budget | Mapping[str, Any] | None, declared: Budget | None
) -> BudgetScope | None:
    """The scope of a delegation: its parent's meters, and one of its own for the
    subagent's budget (`modified_budget` from `on_delegation_start`, else its declared one)."""
    own = _budget(modified) if modified is not None else _budget(declared)
    if own is None:
        return None if parent is None else BudgetScope(parent.meters)
    return BudgetScope((*(parent.meters if parent is not None else ()), BudgetMeter(own)), own)


def restarted(scope: BudgetScope | None) -> BudgetScope | None:
    """The scope of a background task's try: its own budget only, counted from now."""
    if scope is None or scope.own is None:
        return None
    return BudgetScope((BudgetMeter(scope.own),), scope.own)


def over_budget(scope: BudgetScope | None) -> bool:
    """True when a budget of `scope` is used up: the agent stops before its model call
    (the limit is kept in `scope.exceeded`)."""
    if scope is None:
        return False
    for meter in scope.meters:
        for limit in _LIMITS:
            share = meter.share(limit)
            if share is not None and share >= 1.0:
                scope.exceeded = limit
                return True
    return False


def budget_notice(scope: BudgetScope | None, system: str) -> str:
    """`system` with a line telling the agent which budgets are at 80% or more, for its
    next model call only: each budget and limit is told once per agent run."""
    if scope is None:
        return system
    parts = []
    for index, meter in enumerate(scope.meters):
        for limit in _LIMITS:
            share = meter.share(limit)
            if share is None or share < NOTICE_AT or (index, limit) in scope.noticed:
                continue
            scope.noticed.add((index, limit))
            parts.append(f"{int(share * 100)}% of the {_NAMES[limit]} ({_figures(meter, limit)}) is used")
    if not parts:
        return system
    line = f"Budget notice: {'; '.join(parts)}; finish soon."
    return f"{system}\n\n{line}" if system else line


def _figures(meter: BudgetMeter, limit: str) -> str:
    cap = getattr(meter.limits, limit)
    if limit == "seconds":
        return f"{meter.used(limit):,.1f} of {cap:,g} seconds"
    if limit == "cost":
        return f"${meter.used(limit):,.4f} of ${cap:,g}"
    return f"{int(meter.used(limit)):,} of {cap:,}"


def spend(scope: BudgetScope | None, usage: Mapping[str, Any] | None, answer: Any = None) -> None:
    """Add one model call's reported usage (or a remote delegation's total) to every
    meter of `scope`; under a cost limit, its price too, by the model that gave `answer`
    (none given, or no price: nothing, SPEC §33)."""
    if scope is None or not usage:
        return
    if scope.priced:
        cost = call_cost(usage, answer)
        for meter in scope.meters:
            meter.cost += cost or 0.0
    if not usage.get("total_tokens"):
        usage = {**usage, "total_tokens": int(usage.get("input_tokens") or 0) + int(usage.get("output_tokens") or 0)}
    for meter in scope.meters:
        add_usage(meter.usage, usage)


def count_dropped(
    scope: BudgetScope | None, ledger: dict[str, UsageCounts], path: str, usage: Mapping[str, Any] | None
) -> None:
    """A model call whose answer never reaches a message (a guard tripped on the turn or
    sent the answer back, SPEC §30) was billed all the same: its usage counts in `ledger`,
    the run's usage that is in no message (by agent path), which the run's result adds to
    `usage` and `usage_by_agent` (the budgets counted it when it arrived: `BudgetMeters`)."""
    if not usage:
        return
    add_usage(ledger.setdefault(path, zero_usage()), usage)


def take_tool_call(scope: BudgetScope | None, call: ToolCall) -> ToolMessage | None:
    """Count a tool call about to run: None when every budget allows it, else the result
    it gets instead of running. Check and count happen together, so parallel calls
    never run past the limit."""
    if scope is None:
        return None
    for meter in scope.meters:
        cap = meter.limits.tool_calls
        if cap is not None and meter.tool_calls >= cap:
            return ToolMessage(
                content=f"{BUDGET_EXCEEDED} tool_calls", tool_call_id=call["id"] or "", name=call["name"], status="error"
            )
    for meter in scope.meters:
        meter.tool_calls += 1
    return None


def exceeded_result(record: DelegationRecord, scope: BudgetScope | None) -> None:
    """A delegation that a budget stopped answers `[Budget exceeded] <limit>`."""
    if record.finish_reason == "budget":
        limit = scope.exceeded if scope is not None and scope.exceeded else "budget"
        record.text = f"{BUDGET_EXCEEDED} {limit}"


def own_budget(scope: BudgetScope | None) -> dict[str, Any] | None:
    """The agent's own budget as JSON (what a background task's record keeps), or None."""
    return scope.own.model_dump(exclude_none=True) if scope is not None and scope.own is not None else None


class AgentBudget(Step):
    """`Agent(budget=...)` as a step: the limits each run of the agent opens
    (`open_budget`, with the run's own); the turn meters them (`nodes/turn/turn.py`)."""

    name = "budget"

    def __init__(self, budget: Budget) -> None:
        self.budget = budget


def budget_of(spec: AgentSpec) -> Budget | None:
    """The budget the agent declares, if any."""
    step = spec.steps.find(AgentBudget)
    return step.budget if step is not None else None


class BudgetMeters(Step):
    """The budgets of a run as a step of each turn they cover (the meters live in the
    run's `handle.budget`, so one instance serves every run: `METERS`)."""

    name = "budget_meters"

    def stop(self, handle: Any) -> str | None:
        return "budget" if over_budget(handle.budget) else None

    async def awrap_model_call(self, request: ModelRequest, handler: ModelHandler) -> Any:
        scope = request.handle.budget
        try:
            notice = budget_notice(scope, "")  # after the conversation: the prefix stays the same
            out = await handler(request.override(tail=(*request.tail, notice)) if notice else request)
        finally:
            for usage in request.spent:  # a summary's tokens count too
                spend(scope, usage)
        answer = out[0] if isinstance(out, tuple) else out  # a streamed answer comes with what its guards decided
        if isinstance(answer, AIMessage):
            spend(scope, answer.usage_metadata, answer)
        return out

    async def awrap_tool_call(self, request: ToolRequest, handler: ToolHandler) -> Any:
        refused = take_tool_call(request.handle.budget, request.tool_call)  # counted as it runs
        return refused if refused is not None else await handler(request)


METERS = BudgetMeters()
