"""Where a run goes after state written from outside: `aupdate_state(config, values,
as_node=...)`, LangGraph Studio's "edit and rerun", a server's `threads.update_state`
(SPEC §34).

The graph routes with `Command` alone, and LangGraph follows only edges after an outside
update: an edited delegation call of the supervisor would never run and an edited
subagent result would never be read. So each routing node gets one more route that acts
only on an outside update:

- as the supervisor: the unanswered calls of its last answer run, as its own routing
  sends them (`dispatch`), with the edited prompt; with every call answered (an edited
  result, which LangGraph attributes to the supervisor when `as_node` is left out), the
  supervisor reads the results;
- as a subagent, its completion or the tools node: the supervisor reads the result.

The route sees the node's raw output, a `Command` from a node's run, the values dict
from an outside update, which LangGraph's `add_conditional_edges` cannot give (it hands
the path the state with the node's output merged in). So it is attached to the compiled
graph without a state reader: a node's run pays one call that returns at once, and
nothing is read, written or drawn.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from langchain_core.messages import ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph._internal._runnable import RunnableCallable
from langgraph.graph._branch import BranchSpec
from langgraph.pregel._read import ChannelRead

from supervisor_graph.nodes.scope.lookup import run_scope
from supervisor_graph.nodes.spec import AgentSpec
from supervisor_graph.nodes.turn.routing import SUPERVISOR_NODE, dispatch, last_turn

__all__ = ["route_outside_updates"]

_BRANCH = "outside_update"


def route_outside_updates(graph: Any, spec: AgentSpec, results: Iterable[str]) -> None:
    """Give the compiled `graph` its routes after outside updates: as the supervisor,
    and as each node in `results` (the nodes whose output the supervisor reads next)."""
    graph.attach_branch(SUPERVISOR_NODE, _BRANCH, _spec(_supervisor_route(spec)), with_reader=False)
    for name in results:
        graph.attach_branch(name, _BRANCH, _spec(_to_supervisor), with_reader=False)


def _spec(route: Any) -> BranchSpec:
    return BranchSpec(path=RunnableCallable(route, trace=False), ends=None)


def _to_supervisor(output: Any) -> list[str]:
    return [SUPERVISOR_NODE] if isinstance(output, dict) else []


def _supervisor_route(spec: AgentSpec) -> Any:
    def route(output: Any, config: RunnableConfig) -> list[Any]:
        if not isinstance(output, dict):  # the node's own run routed with its `Command`
            return []
        messages = ChannelRead.do_read(config, select="messages", fresh=True) or []
        start, ai = last_turn(messages)
        if ai is None or not ai.tool_calls:
            return []
        answered = {m.tool_call_id for m in messages[start:] if isinstance(m, ToolMessage)}
        if all(call["id"] in answered for call in ai.tool_calls):
            return [SUPERVISOR_NODE]  # an edited result (as the supervisor, LangGraph's guess): it reads it
        opts, handle = run_scope(spec, config, None)
        sends, _invalid = dispatch(spec, opts, handle, ai, answered)
        # a call edited so that it cannot run gets no result here (a route writes no
        # messages): the run ends with it open, and the next run closes it as cancelled
        return sends

    return route
