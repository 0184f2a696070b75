"""The guards' step (SPEC §30, §32): where an agent's guards act on its turn.

`core.Guards` holds the settings (which guards, which boundaries they watch), so that
every module of this package can read them; this step, built by the compiler for an
agent with guards, is where they take effect through the step protocol: around the
model call (`guard_answer`: the input, the answer as it streams and whole).
"""

from __future__ import annotations

from typing import Any

from supervisor_graph.nodes.guards.answers import guard_answer
from supervisor_graph.nodes.guards.core import Guards
from supervisor_graph.nodes.steps.protocol import ModelHandler, ModelRequest

__all__ = ["GuardedTurn"]


class GuardedTurn(Guards):
    """An agent's guards acting on its turn."""

    async def awrap_model_call(self, request: ModelRequest, handler: ModelHandler) -> Any:
        return await guard_answer(request.spec, request, handler)
