"""supervisor-graph: declare a supervisor agent and its subagents in Python and run them
as a LangGraph `StateGraph`.

Example:
    >>> from supervisor_graph import Agent
    >>> from supervisor_graph.testing import ScriptedChatModel, delegate
    >>> research = Agent(id="research-agent", description="Finds facts.",
    ...                  model=ScriptedChatModel(responses=["- Tutoring systems adapt to each student."]))
    >>> parent = Agent(id="parent-agent", instructions="Delegate research, then answer.",
    ...                model=ScriptedChatModel(responses=[delegate("research_agent", "AI in education"),
    ...                                                   "AI tutors adapt to students."]),
    ...                agents={"research_agent": research})
    >>> result = parent.generate_sync("Tell me about AI in education")
    >>> result.text, result.finish_reason, result.usage.total_tokens
    ('AI tutors adapt to students.', 'stop', 45)
"""

from supervisor_graph.agent import Agent
from supervisor_graph.compiler.build import compile_agent
from supervisor_graph.declaration.a2a import A2AAgent
from supervisor_graph.declaration.errors import (
    MissingAPIKeyError,
    ModelCallError,
    NothingPendingError,
    PendingApprovalError,
    StorageUnavailableError,
    SupervisorGraphError,
    ThreadBusyError,
)
from supervisor_graph.declaration.remote import RemoteAgent
from supervisor_graph.declaration.scorers import (
    Score,
    ScoringContext,
    TaskCompleteResult,
    create_rubric_scorer,
    create_scorer,
)
from supervisor_graph.declaration.tools import (
    ToolCallInfo,
    create_tool,
    current_request_context,
    current_tool_call,
    suspend,
)
from supervisor_graph.memory.memory import Memory, ThreadRecord
from supervisor_graph.memory.versions import AgentDefinition, AgentVersion
from supervisor_graph.nodes.delegation.control import (
    DELEGATION_HOOK_ERRORS,
    RESOURCE_ID_KEY,
    RUN_ID_KEY,
    THREAD_ID_KEY,
    DelegationCompleteContext,
    DelegationCompleteResult,
    DelegationResult,
    DelegationStartContext,
    DelegationStartResult,
    InheritContext,
)

# Imported for what they register: the capabilities whose per-call options `RunOptions`
# validates register their parsers on import (`capability_option`; nodes/options.py
# imports no capability, SPEC §32). Importing any module of this package (nodes.options
# too) runs this file first, so no option is validated before them, whatever else is imported here.
from supervisor_graph.nodes.gates import scoring as _scoring  # noqa: F401
from supervisor_graph.nodes.gates.iteration import IterationContext, IterationResult
from supervisor_graph.nodes.options import DelegationOptions, MemoryOptions, RunContext, RunOptions
from supervisor_graph.nodes.scope.context import AbortController, AbortSignal, RequestContext
from supervisor_graph.nodes.scope.versions import VERSIONS_KEY, VersionSelection
from supervisor_graph.nodes.state import SupervisorState
from supervisor_graph.nodes.steps import budget as _budget  # noqa: F401
from supervisor_graph.nodes.steps import structured_output as _structured_output  # noqa: F401
from supervisor_graph.nodes.steps.budget import Budget
from supervisor_graph.nodes.steps.structured_output import StructuredOutputError
from supervisor_graph.nodes.steps.working_memory import WorkingMemory, WorkingMemoryError
from supervisor_graph.run.chunks import FinishChunk, StreamChunk, Usage
from supervisor_graph.run.facade import AgentStream, GenerateResult, PendingItem

__all__ = [
    "A2AAgent",
    "DELEGATION_HOOK_ERRORS",
    "RESOURCE_ID_KEY",
    "RUN_ID_KEY",
    "THREAD_ID_KEY",
    "VERSIONS_KEY",
    "AbortController",
    "AbortSignal",
    "AgentDefinition",
    "AgentVersion",
    "Agent",
    "AgentStream",
    "Budget",
    "DelegationCompleteContext",
    "DelegationCompleteResult",
    "DelegationResult",
    "DelegationOptions",
    "DelegationStartContext",
    "DelegationStartResult",
    "FinishChunk",
    "GenerateResult",
    "InheritContext",
    "StorageUnavailableError",
    "StructuredOutputError",
    "IterationContext",
    "IterationResult",
    "Memory",
    "MemoryOptions",
    "MissingAPIKeyError",
    "ModelCallError",
    "NothingPendingError",
    "PendingApprovalError",
    "PendingItem",
    "RemoteAgent",
    "RequestContext",
    "RunContext",
    "RunOptions",
    "StreamChunk",
    "SupervisorGraphError",
    "SupervisorState",
    "ThreadBusyError",
    "ThreadRecord",
    "ToolCallInfo",
    "Usage",
    "VersionSelection",
    "WorkingMemory",
    "WorkingMemoryError",
    "compile_agent",
    "Score",
    "ScoringContext",
    "TaskCompleteResult",
    "create_rubric_scorer",
    "create_scorer",
    "create_tool",
    "current_request_context",
    "current_tool_call",
    "suspend",
]
