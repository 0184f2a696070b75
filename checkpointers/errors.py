"""`SupervisorGraphError`, the base class of this library's errors, at the bottom layer:
the storage layer's own errors (`outages.StorageUnavailableError`) are the library's
errors too, and imports only point down (`supervisor_graph.nodes.errors` and the public
package re-export it)."""

from __future__ import annotations

__all__ = ["SupervisorGraphError"]


class SupervisorGraphError(Exception):
    """Base class of this library's errors."""
