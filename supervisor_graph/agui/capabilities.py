"""What a served agent can do, as AG-UI `AgentCapabilities` (`GET .../capabilities`):
read from the declaration, or for a remote graph from what its server keeps."""

from __future__ import annotations

from ag_ui.core import (
    AgentCapabilities,
    ExecutionCapabilities,
    HumanInTheLoopCapabilities,
    IdentityCapabilities,
    MultiAgentCapabilities,
    ReasoningCapabilities,
    StateCapabilities,
    SubagentInfo,
    Tool,
    ToolsCapabilities,
    TransportCapabilities,
)
from langchain_core.utils.function_calling import convert_to_openai_tool

from supervisor_graph.agent import Agent
from supervisor_graph.declaration.remote import RemoteAgent

__all__ = ["capabilities"]


def capabilities(agent: Agent | RemoteAgent, *, attributed: bool, shared_state: bool) -> AgentCapabilities:
    """`agent`'s capabilities; `attributed` lists its subagents, `shared_state` says the
    client's state is the agent's working memory."""
    if isinstance(agent, RemoteAgent):
        # a remote graph's interrupts can be answered only when its server keeps the thread
        return AgentCapabilities(
            identity=IdentityCapabilities(name=agent.id, type="langgraph-remote", description=agent.description),
            transport=TransportCapabilities(streaming=True),
            human_in_the_loop=HumanInTheLoopCapabilities(
                supported=agent.resumable, approvals=agent.resumable, interrupts=agent.resumable
            ),
        )
    tools = [Tool(**convert_to_openai_tool(tool)["function"]) for tool in agent.tools.values()]
    return AgentCapabilities(
        identity=IdentityCapabilities(name=agent.name or agent.id, type="supervisor-graph", description=agent.description),
        transport=TransportCapabilities(streaming=True),
        tools=ToolsCapabilities(supported=True, items=tools or None, parallel_calls=True, client_provided=True),
        reasoning=ReasoningCapabilities(supported=True, streaming=True, encrypted=True),
        human_in_the_loop=HumanInTheLoopCapabilities(supported=True, approvals=True, interrupts=True),
        multi_agent=MultiAgentCapabilities(
            supported=True,
            delegation=True,
            subagents=[SubagentInfo(name=sub.id, description=sub.description) for sub in agent.agents.values()],
        )
        if attributed and agent.agents
        else None,
        execution=ExecutionCapabilities(max_iterations=agent.defaults.max_steps),
        # shared state is the agent's working memory: only an agent with one has it
        state=StateCapabilities(snapshots=True, deltas=True, persistent_state=True) if shared_state else None,
    )
