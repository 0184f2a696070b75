"""One delegation, start to end, whichever way it runs: `open_delegation` opens it
(`opening`), then `run_and_complete` runs it one way, turns what that way raised into a
failed delegation (an abort tells `on_delegation_complete`, SPEC §10), and completes it
(`complete`).

The ways to run are the callers' own: a leaf's direct loop, a subgraph, a background
task (`subagent`), a LangGraph server or an A2A agent (`nodes/remote`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from langgraph.errors import GraphBubbleUp
from langgraph.types import Command

from supervisor_graph.nodes.delegation.complete import abort_delegation, finish_delegation
from supervisor_graph.nodes.delegation.opening import Delegation, open_delegation

__all__ = ["open_delegation", "run_and_complete"]


async def run_and_complete(
    opened: Delegation | Command[Any], way: Callable[[Any], Awaitable[Command[Any] | None]]
) -> Command[Any]:
    """Run a delegation `open_delegation` opened (the command it returned instead, when a
    `delegation` guard stopped it, is the node's answer) and complete it. `way` runs it
    and fills in its record; the command it returns ends the node instead of a
    completion (a pause that must be the first action of a fresh task, a task now running
    in the background). Its pause (`GraphBubbleUp`) pauses the parent; any other
    exception is a failed delegation (`Delegation.failed`)."""
    if not isinstance(opened, Delegation):
        return opened
    try:
        handoff = await way(opened)
        if handoff is not None:
            return handoff
    except GraphBubbleUp:
        raise  # interrupts and parent commands belong to LangGraph
    except asyncio.CancelledError:
        # the run was aborted (or a new message stopped it) while the subagent ran: a
        # failed delegation, never a success with no text (SPEC §10)
        await abort_delegation(opened.opts, opened.handle, opened.record, opened.agent_id)
        raise
    except Exception as exc:  # noqa: BLE001 - a failed subagent is a failed tool result
        opened.failed(exc)
    return await finish_delegation(opened)
