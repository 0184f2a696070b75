"""An agent's steps (SPEC §32), built once when it is compiled: one per optional
capability it declares, in the order they wrap its turn. An agent declaring none gets
none, and its turn pays nothing for them (`nodes/steps/protocol.py`).

Adding a capability: its module under `nodes/steps/` implements `Step`, and one line
here adds it for the agents that declare it.
"""

from __future__ import annotations

from supervisor_graph.nodes.background.control import ControlTools
from supervisor_graph.nodes.steps.compaction import Compaction, Compactor
from supervisor_graph.nodes.steps.protocol import Step, Steps
from supervisor_graph.nodes.steps.working_memory import WorkingMemory, WorkingMemoryTool

__all__ = ["steps_of"]


def steps_of(
    compactor: Compactor | None, working_memory: WorkingMemory | None = None, background: bool = False
) -> Steps:
    steps: list[Step] = []
    if compactor is not None:
        steps.append(Compaction(compactor))
    if working_memory is not None:
        steps.append(WorkingMemoryTool(working_memory))
    if background:
        steps.append(ControlTools())
    return Steps.of(steps)
