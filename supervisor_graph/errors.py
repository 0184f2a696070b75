"""Exceptions that say what to fix."""

from __future__ import annotations

__all__ = ["MissingAPIKeyError", "NothingPendingError", "SupervisorGraphError", "ThreadBusyError"]


class SupervisorGraphError(Exception):
    """Base class of this library's errors."""


class MissingAPIKeyError(SupervisorGraphError):
    """A provider model was used without credentials."""


class ThreadBusyError(SupervisorGraphError):
    """Another run is already working on this thread."""


class NothingPendingError(SupervisorGraphError):
    """A resume was asked for a thread with nothing pending."""
