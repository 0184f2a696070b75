"""AG-UI shared state: the served agent's working memory (AGUI.md "Shared state").

The client's state is always a JSON object: in schema mode the working memory itself,
in template mode `{"working_memory": "<markdown>"}` (a bare string would not merge with
anything a front end keeps beside it). Updates travel as RFC 6902 patches made by
`jsonpatch`.
"""

from __future__ import annotations

from typing import Any

import jsonpatch
from ag_ui.core import BaseEvent, StateDeltaEvent, StateSnapshotEvent

from supervisor_graph.agui.frontend import InputError
from supervisor_graph.memory.memory import Memory
from supervisor_graph.nodes.steps.working_memory import WorkingMemory, WorkingMemoryError

__all__ = ["SharedState", "TEMPLATE_KEY"]

TEMPLATE_KEY = "working_memory"


class SharedState:
    """The working memory of one served agent, as AG-UI state."""

    def __init__(self, agent_id: str, config: WorkingMemory, memory: Memory) -> None:
        self.agent_id = agent_id
        self.config = config
        self.memory = memory

    def view(self, value: Any) -> dict[str, Any]:
        """The client's state for working-memory value `value`."""
        if self.config.structured:
            return dict(value) if isinstance(value, dict) else {}
        return {TEMPLATE_KEY: value if isinstance(value, str) else self.config.empty_view()}

    def parse(self, state: Any) -> Any:
        """The working-memory value a client's state stands for, or `InputError`
        `INVALID_STATE` saying what is wrong."""
        try:
            if not isinstance(state, dict):
                raise WorkingMemoryError(f"state must be a JSON object, not {type(state).__name__}")
            if self.config.structured:
                return self.config.validate_value(state)
            if set(state) != {TEMPLATE_KEY}:
                raise WorkingMemoryError(f'state must be {{"{TEMPLATE_KEY}": "<markdown>"}}')
            return self.config.validate_value(state[TEMPLATE_KEY])
        except WorkingMemoryError as exc:
            raise InputError("INVALID_STATE", f"RunAgentInput.state was not applied: {exc}") from None

    async def load(self, thread: str, resource: str) -> Any:
        return await self.memory.get_working_memory(agent_id=self.agent_id, thread=thread, resource=resource)

    async def sync(self, state: Any, thread: str, resource: str, *, paused: bool) -> dict[str, Any]:
        """Write the client's `state` (when it is not empty and differs from what is
        stored) and return the view the run starts from."""
        current = await self.load(thread, resource)
        if not state:
            return self.view(current)
        value = self.parse(state)
        if self.view(value) == self.view(current):
            return self.view(current)
        if paused and self.config.scope == "thread":
            raise InputError(
                "INVALID_STATE", "The working memory cannot change while tool calls wait for answers; nothing was changed."
            )
        # the client sends its whole state: keys it removed must go, so replace
        stored = await self.memory.set_working_memory(
            value, agent_id=self.agent_id, thread=thread, resource=resource, replace=True
        )
        return self.view(stored)


def snapshot(view: dict[str, Any]) -> BaseEvent:
    return StateSnapshotEvent(snapshot=view)


def delta(before: dict[str, Any], after: dict[str, Any]) -> list[BaseEvent]:
    """A `STATE_DELTA` taking the client from `before` to `after` (none when equal)."""
    operations = jsonpatch.make_patch(before, after).patch
    return [StateDeltaEvent.model_validate({"delta": operations})] if operations else []
