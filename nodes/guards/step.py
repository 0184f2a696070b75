"""The guards' step (SPEC §30, §32): where an agent's guards act on its turn.

`core.Guards` holds the settings (which guards, which boundaries they watch), so that
every module of this package can read them; this step, built by the compiler for an
agent with guards, is where they take effect through the step protocol.
"""

from __future__ import annotations

from supervisor_graph.nodes.guards.core import Guards

__all__ = ["GuardedTurn"]


class GuardedTurn(Guards):
    """An agent's guards acting on its turn."""
