"""Request context and cancellation handles shared by every node of a run, with the
run-level keys a request context carries and the check its values face on a durable run."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from typing import Any

__all__ = [
    "DELEGATION_HOOK_ERRORS",
    "RESOURCE_ID_KEY",
    "RUN_IDENTITY_KEYS",
    "RUN_ID_KEY",
    "THREAD_ID_KEY",
    "AbortController",
    "AbortSignal",
    "RequestContext",
    "check_json",
    "current_request_context",
    "using_request_context",
]

# The request-context key of the run's list of delegation hook failures (SPEC §6.4).
DELEGATION_HOOK_ERRORS = "__supervisor_graph_delegation_hook_errors"
"""The request-context key of the run's list of delegation hook failures, either strategy (`[]` if none)."""
# Run-level identity keys in a request context; never copied to a delegation's context.
RUN_ID_KEY = "__supervisor_graph_run_id"
"""The request-context key of the run's id (run-level: never copied to a delegation's context)."""
THREAD_ID_KEY = "__supervisor_graph_thread_id"
"""The request-context key of the run's thread id (run-level: never copied to a delegation's context)."""
RESOURCE_ID_KEY = "__supervisor_graph_resource_id"
"""The request-context key of the run's resource id (run-level: never copied to a delegation's context)."""
RUN_IDENTITY_KEYS = frozenset({RUN_ID_KEY, THREAD_ID_KEY, RESOURCE_ID_KEY, DELEGATION_HOOK_ERRORS})


class RequestContext:
    """Per-run key/value context that tools, hooks and dynamic instructions read.

    The object a caller passes to `generate(request_context=...)` *is* the top-level
    run's context, so the caller can read back what the run recorded in it. Each
    delegation gets a shallow copy (`fork()`), so a subagent can never change its
    parent's entries.

    Example:
        >>> ctx = RequestContext({"tenant": "acme"})
        >>> ctx.set("audience", "technical")
        >>> ctx.get("tenant"), ctx.has("audience"), sorted(ctx.keys())
        ('acme', True, ['audience', 'tenant'])
    """

    __slots__ = ("_data",)

    def __init__(self, initial: Mapping[str, Any] | None = None) -> None:
        self._data: dict[str, Any] = dict(initial or {})

    def get(self, key: str, default: Any = None) -> Any:
        if key == DELEGATION_HOOK_ERRORS and key not in self._data:
            # the run's hook failures are a list, [] while nothing failed; hooks that
            # fail later append to this same list
            errors: list[Any] = []
            self._data[key] = errors
            return errors
        return self._data.get(key, default)

    def set(self, key: str, value: Any) -> None:
        self._data[key] = value

    def delete(self, key: str) -> None:
        self._data.pop(key, None)

    def has(self, key: str) -> bool:
        return key in self._data

    def keys(self) -> list[str]:
        return list(self._data)

    def to_dict(self) -> dict[str, Any]:
        return dict(self._data)

    def fork(self, drop: frozenset[str] = frozenset()) -> RequestContext:
        """A shallow copy without the run-level keys in `drop`."""
        return RequestContext({k: v for k, v in self._data.items() if k not in drop})

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return f"RequestContext({self._data!r})"


def check_json(values: dict[str, Any], where: str) -> None:
    """Request-context values must survive a durable checkpointer: JSON or a clear error."""
    for key, value in values.items():
        try:
            json.dumps(value)
        except (TypeError, ValueError):
            raise TypeError(
                f"{where}: request context entry {key!r} holds a {type(value).__name__}, which is not "
                "JSON-serialisable; with a durable checkpointer (sqlite, Postgres) request-context "
                "values must be JSON values"
            ) from None


class AbortSignal:
    """Read side of an `AbortController`: `aborted`, `reason`, and `wait()`."""

    __slots__ = ("_event", "reason")

    def __init__(self) -> None:
        self._event = asyncio.Event()
        self.reason: Any = None

    @property
    def aborted(self) -> bool:
        return self._event.is_set()

    def is_set(self) -> bool:
        return self._event.is_set()

    async def wait(self) -> None:
        await self._event.wait()


class AbortController:
    """Cancels a run: pass `controller.signal` as `abort_signal`, call `abort()`.

    Example:
        >>> controller = AbortController()
        >>> controller.abort("user left")
        >>> controller.signal.aborted, controller.signal.reason
        (True, 'user left')
    """

    __slots__ = ("signal",)

    def __init__(self) -> None:
        self.signal = AbortSignal()

    def abort(self, reason: Any = None) -> None:
        self.signal.reason = reason
        self.signal._event.set()


_current: ContextVar[RequestContext | None] = ContextVar("supervisor_graph_request_context", default=None)


def current_request_context() -> RequestContext:
    """The request context of the agent run this code is part of (inside a tool, say).

    Raises:
        RuntimeError: called outside a run.
    """
    ctx = _current.get()
    if ctx is None:
        raise RuntimeError("current_request_context() is only available while an agent runs (in its tools)")
    return ctx


def using_request_context(ctx: RequestContext) -> None:
    """Make `ctx` current for the calling task (nodes run each in a task of their own)."""
    _current.set(ctx)
