"""Exceptions that say what to fix."""

from __future__ import annotations

from typing import Any

from supervisor_graph.checkpointers.outages import StorageUnavailableError
from supervisor_graph.nodes.errors import ModelCallError, SupervisorGraphError
from supervisor_graph.nodes.remote.langgraph import RemoteNotResumableError

__all__ = [
    "CLIError",
    "MissingAPIKeyError",
    "ModelCallError",
    "NothingPendingError",
    "PendingApprovalError",
    "RemoteNotResumableError",
    "StorageUnavailableError",
    "SupervisorGraphError",
    "ThreadBusyError",
]


class MissingAPIKeyError(SupervisorGraphError):
    """A provider model was used without credentials."""


class CLIError(Exception):
    """A mistake a command-line user can fix; printed as one line, exit status 2. (Here,
    not in the CLI module, so `python -m supervisor_graph.cli` and the modules it loads
    share one class.)"""


class ThreadBusyError(SupervisorGraphError):
    """Another run is already working on this thread."""


class NothingPendingError(SupervisorGraphError):
    """A resume was asked for a thread with nothing pending."""


class PendingApprovalError(SupervisorGraphError):
    """A new message was sent while approvals (or suspended tools) wait on the thread.

    `pending` lists what waits (`PendingItem`s). Answer them first, or pass
    `pending="decline"` to decline them and go on with the new message.
    """

    def __init__(self, message: str, pending: list[Any]) -> None:
        super().__init__(message)
        self.pending = pending
