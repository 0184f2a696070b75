"""An agent's steps (SPEC §32), built once when it is compiled: one per capability it
declares, each holding that capability's settings, in the order they wrap its turn, and
for an agent with tools the decisions on their calls (a run may ask before each call,
so the declaration cannot tell). An agent declaring none and without tools gets none,
and its turn pays nothing for them (`nodes/steps/protocol.py`).

Adding a capability: its module under `nodes/` implements `Step`, and one line here
adds it for the agents that declare it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from supervisor_graph.declaration.fallbacks import FallbackChatModel
from supervisor_graph.declaration.models import parse_model_string
from supervisor_graph.nodes.background.control import ControlTools
from supervisor_graph.nodes.background.tasks import BackgroundSettings
from supervisor_graph.nodes.guards.core import Guardrail
from supervisor_graph.nodes.guards.step import GuardedTurn
from supervisor_graph.nodes.steps.budget import AgentBudget, Budget
from supervisor_graph.nodes.steps.compaction import Compaction, Compactor
from supervisor_graph.nodes.steps.decisions import APPROVALS, EDIT_NOTE
from supervisor_graph.nodes.steps.prompt_cache import CACHING_PROVIDERS, PromptCache, asks
from supervisor_graph.nodes.steps.protocol import Step, Steps
from supervisor_graph.nodes.steps.structured_output import OutputSchema, StructuredOutput
from supervisor_graph.nodes.steps.usage import UsageLedger
from supervisor_graph.nodes.steps.working_memory import WorkingMemory, WorkingMemoryStep

__all__ = ["asks_to_cache", "steps_of"]


def asks_to_cache(model: Any) -> bool:
    """Whether an agent declaring `model` gets the prompt-cache step (SPEC §33): a model
    string or chat model of a provider that must be asked (Anthropic, OpenAI), a fallback
    list holding one, or a callable, which may return one; any other agent pays nothing
    for it."""
    if isinstance(model, str):
        return parse_model_string(model)[0] in CACHING_PROVIDERS
    if isinstance(model, FallbackChatModel):
        return any(asks_to_cache(item.model) for item in model.models)
    return asks(model)


def steps_of(
    agent_id: str = "",
    delegation_tools: Mapping[str, str] | None = None,
    server_host_for: Callable[[Any], Any] | None = None,
    *,
    compactor: Compactor | None = None,
    working_memory: WorkingMemory | None = None,
    background: BackgroundSettings | None = None,
    budget: Budget | None = None,
    output_schema: OutputSchema | None = None,
    guards: Sequence[Guardrail] = (),
    runs_tools: bool = False,
    middleware: Sequence[Any] = (),
    prompt_cache: bool = False,
) -> Steps:
    """The steps of agent `agent_id` (`delegation_tools`: its delegation tool names by
    subagent key, `server_host_for`, for background tasks a server hosts, and
    `runs_tools`: it has tools the tools node runs, whose calls a person may decide;
    `prompt_cache`: its model's provider must be asked to cache prompts, SPEC §33)."""
    steps: list[Step] = []
    if runs_tools:
        # every agent with tools: a run may ask before each call (`require_tool_approval`);
        # first, so a person decides before any other step sees the call
        steps.append(APPROVALS)
    if guards:  # outside what follows: the ledger counts what the guards keep out of the thread
        steps.extend((UsageLedger(), GuardedTurn(guards)))
    if middleware:  # LangChain's, in its order, inside the guards (imported only when used)
        from supervisor_graph.nodes.steps.middleware import MiddlewareStep

        steps.extend(MiddlewareStep(m) for m in middleware)
    if prompt_cache:  # inside what may change the system prompt for good, outside what appends to it per call
        steps.append(PromptCache())
    if compactor is not None:
        steps.append(Compaction(compactor))
    if working_memory is not None:
        steps.append(WorkingMemoryStep(working_memory, agent_id))
    if background is not None:
        steps.append(ControlTools(background, delegation_tools or {}, server_host_for))
    if budget is not None:
        steps.append(AgentBudget(budget))
    if output_schema is not None:
        steps.append(StructuredOutput(output_schema))
    if runs_tools:
        steps.append(EDIT_NOTE)  # innermost: the `tool_result` guard reads an edited call's note
    return Steps.of(steps)
