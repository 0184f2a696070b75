"""Exceptions that say what to fix."""

from __future__ import annotations

from supervisor_graph.nodes.errors import ModelCallError, SupervisorGraphError

__all__ = ["MissingAPIKeyError", "ModelCallError", "NothingPendingError", "SupervisorGraphError", "ThreadBusyError"]


class MissingAPIKeyError(SupervisorGraphError):
    """A provider model was used without credentials."""


class ThreadBusyError(SupervisorGraphError):
    """Another run is already working on this thread."""


class NothingPendingError(SupervisorGraphError):
    """A resume was asked for a thread with nothing pending."""
