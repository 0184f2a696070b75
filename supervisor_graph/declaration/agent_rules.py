"""Rules a tree of agents follows, shared by the declaration and the compiler: no agent is
its own subagent, and which model-call failures are retried."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from langgraph.types import RetryPolicy

from supervisor_graph.declaration.errors import SupervisorGraphError
from supervisor_graph.declaration.remote import RemoteSubagent
from supervisor_graph.nodes.background.tasks import BackgroundSettings, background_setting
from supervisor_graph.nodes.spec import DELEGATION_PREFIX
from supervisor_graph.nodes.steps.working_memory import WORKING_MEMORY_TOOL

if TYPE_CHECKING:
    from supervisor_graph.agent import Agent

__all__ = ["agents_from", "background_settings_of", "check_cycles", "check_tool_names", "model_retry_policy"]


def check_tool_names(agent: Agent) -> None:
    """Raise ValueError when one of the agent's tools takes a name the library gives a
    tool of its own: a subagent's delegation tool, or the working-memory tool."""
    for key in agent.agents:
        if f"{DELEGATION_PREFIX}{key}" in agent.tools:
            raise ValueError(
                f"tools: tool name '{DELEGATION_PREFIX}{key}' clashes with the delegation tool of subagent "
                f"{key!r}; rename the tool"
            )
    if agent.effective_working_memory is not None and WORKING_MEMORY_TOOL in agent.tools:
        raise ValueError(
            f"tools: {WORKING_MEMORY_TOOL!r} is the working-memory tool of agent {agent.id!r}; rename your tool"
        )


# Provider errors that say "try again" (OpenAI-compatible clients and others name them so).
_TRANSIENT = frozenset(
    {"RateLimitError", "APIConnectionError", "APITimeoutError", "InternalServerError", "ServiceUnavailableError",
     "OverloadedError"}
)


def _retry_on(exc: Exception) -> bool:
    """Only transient failures: lost connections, timeouts, rate limits, 5xx. Anything
    else (a bad request, a guardrail, this library's own errors) fails at once."""
    if isinstance(exc, SupervisorGraphError):
        return False
    if isinstance(exc, ConnectionError | TimeoutError) or type(exc).__name__ in _TRANSIENT:
        return True
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    return isinstance(status, int) and 500 <= status < 600


def model_retry_policy() -> RetryPolicy:
    """Default retries of a model call: 3 attempts, 0.5 s then 1 s apart (with jitter)."""
    return RetryPolicy(max_attempts=3, initial_interval=0.5, retry_on=_retry_on)


def check_cycles(agent: Agent) -> None:
    """Raise ValueError naming the path if an agent is (transitively) its own subagent."""

    def walk(node: Any, path: tuple[str, ...], ids: tuple[int, ...]) -> None:
        for key, sub in node.agents.items():
            if id(sub) in ids or sub.id in path:
                raise ValueError(f"agents: cycle {' -> '.join((*path, sub.id))} (via key {key!r})")
            if not isinstance(sub, RemoteSubagent):  # a remote agent's team is its server's business
                walk(sub, (*path, sub.id), (*ids, id(sub)))

    walk(agent, (agent.id,), (id(agent),))


def agents_from(factory: Callable[..., Any], request_context: Any, agent_id: Any, kinds: tuple[type, ...]) -> dict[str, Any]:
    """The subagents `factory` chooses for `request_context`, or one clear error naming
    the agent whose callable failed."""
    try:
        chosen = factory(request_context)
    except Exception as exc:
        raise ValueError(f"Agent {agent_id!r}: its agents callable raised {type(exc).__name__}: {exc}") from exc
    if not isinstance(chosen, dict) or not all(
        isinstance(k, str) and isinstance(v, kinds) for k, v in chosen.items()
    ):
        raise ValueError(
            f"Agent {agent_id!r}: its agents callable must return a dict of key -> Agent, RemoteAgent or A2AAgent, "
            f"got {type(chosen).__name__}"
        )
    return chosen


def background_settings_of(declared: BackgroundSettings | None, agents: dict[str, Any]) -> BackgroundSettings | None:
    """`declared` (an agent's `background_tasks`) with what its local subagents inherit:
    one not listed whose tools include a background-eligible one runs in the background
    with that tool's setting (seed 000). An explicit entry, even `{"enabled": False}`, wins."""
    listed = declared.tools if declared is not None else {}
    inherited = {}
    for key, sub in agents.items():
        if key in listed or isinstance(sub, RemoteSubagent):
            continue
        setting = next((s for s in map(background_setting, sub.tools.values()) if s is not None), None)
        if setting is not None:
            inherited[key] = setting
    if not inherited:
        return declared if any(s.enabled for s in listed.values()) else None
    return BackgroundSettings(tools={**listed, **inherited})
