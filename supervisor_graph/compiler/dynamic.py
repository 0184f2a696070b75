"""The compiled graph of an agent whose subagents are chosen per run (`agents=callable`).

A compiled graph's nodes are fixed, but such an agent's subagent keys are known only
once a run's request context is. Its graph therefore has the usual supervisor, tools,
iteration and task-completion nodes plus three generic delegation nodes
(`subagent.start`, `subagent`, `subagent.complete`). Each node looks up, per run, the
set the callable chooses (`Agent.for_request`, whose variants are cached) and calls
that set's own node function; the `Send`s those functions return are renamed onto the
generic nodes, with the subagent key in the payload. So `graph.ainvoke(...,
context={"request_context": {...}})`, Studio and servers choose the set the facade
would, and every node runs exactly the code of the set's static graph.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime
from langgraph.types import Command, Send

from supervisor_graph.nodes.scope.lookup import run_scope
from supervisor_graph.nodes.spec import AgentSpec
from supervisor_graph.nodes.turn.routing import complete_node, start_node

if TYPE_CHECKING:
    from supervisor_graph.agent import Agent

__all__ = ["SLOT", "DynamicNodes"]

# the generic delegation node; its hook nodes are `subagent.start` / `subagent.complete`
SLOT = "subagent"
_START, _COMPLETE = start_node(SLOT), complete_node(SLOT)
_TABLES = 32  # node tables kept, as many as `Agent.for_request` keeps variants


class DynamicNodes:
    """Node functions that run the node of the subagent set chosen for the run."""

    def __init__(self, agent: Agent, spec: AgentSpec, table_of: Callable[[Agent, AgentSpec], dict[str, Any]], spec_of: Callable[[Agent], AgentSpec]) -> None:
        self.agent, self.spec = agent, spec
        self._table_of, self._spec_of = table_of, spec_of
        self._tables: OrderedDict[int, tuple[Agent, dict[str, Any]]] = OrderedDict()

    def _table(self, config: RunnableConfig, runtime: Runtime[Any]) -> dict[str, Any]:
        _, handle = run_scope(self.spec, config, runtime)
        variant = self.agent.for_request(handle.request_context)
        entry = self._tables.get(id(variant))
        if entry is None or entry[0] is not variant:
            entry = (variant, self._table_of(variant, self._spec_of(variant)))
            self._tables[id(variant)] = entry
            if len(self._tables) > _TABLES:
                self._tables.popitem(last=False)
        else:
            self._tables.move_to_end(id(variant))
        return entry[1]

    def node(self, name: str) -> Any:
        """The function of node `name` (a fixed node, or one of the generic three)."""

        async def dynamic(value: Any, config: RunnableConfig, runtime: Runtime[Any]) -> Any:
            table = self._table(config, runtime)
            if name == SLOT:
                target = value["key"]
            elif name == _START:
                target = start_node(value["key"])
            elif name == _COMPLETE:
                target = complete_node(value["key"])
            else:
                target = name
            function = table.get(target)
            if function is None:  # the set changed between the turn and this step
                raise ValueError(
                    f"Agent {self.agent.id!r}: the subagents its agents callable chose for this run have no "
                    f"{value.get('key')!r}; keep the request context the same across a run and its resume"
                )
            return _renamed(await function(value, config, runtime))

        dynamic.__name__ = name.replace(".", "_")
        return dynamic


def _renamed(result: Any) -> Any:
    if isinstance(result, Command) and result.goto:
        goto = result.goto
        if isinstance(goto, (list, tuple)):
            return Command(update=result.update, goto=[_send(g) for g in goto], graph=result.graph, resume=result.resume)
        return Command(update=result.update, goto=_send(goto), graph=result.graph, resume=result.resume)
    return result


def _send(goto: Any) -> Any:
    if not isinstance(goto, Send):
        return goto  # a fixed node (supervisor, tools, ...) or END
    node, arg = goto.node, goto.arg
    if node.endswith(".start"):
        return Send(_START, arg)
    if node.endswith(".complete"):
        return Send(_COMPLETE, {**arg, "key": node[: -len(".complete")]})
    if isinstance(arg, dict) and arg.get("key") == node:
        return Send(SLOT, arg)
    return goto
