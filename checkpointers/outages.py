"""The database went away: `StorageUnavailableError`, and which driver errors mean it.

A run, a history read or a lease statement that cannot reach its database raises
`StorageUnavailableError` instead of the driver's own exception, so every layer above
(the facade, AG-UI's `RUN_ERROR` code `STORAGE_UNAVAILABLE`, the HTTP routes' 503)
recognises the one condition without importing psycopg or sqlite3. What it does not
cover stays as it was: a deadlock, a constraint, a bad statement is a bug or a race to
report as such, not an outage.

- Postgres: a connection refused, lost or timed out (psycopg's `OperationalError` in
  SQLSTATE classes 08, 57 and 53 — connection exception, operator intervention such as a
  shutdown, insufficient resources such as a full disk — or with no SQLSTATE, which is
  libpq failing on the client side), and no connection from the pool in time.
- sqlite: the file still locked by another connection after the busy wait, the disk (or
  `max_page_count`) full, a disk I/O error, a file that cannot be opened.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import sqlite3
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, Literal, TypeVar

from supervisor_graph.checkpointers.errors import SupervisorGraphError

__all__ = ["SAVER_METHODS", "Reason", "StorageUnavailableError", "outages_as", "translating", "unavailable"]

C = TypeVar("C", bound=type)

# unreachable: no connection to the database (refused, lost, shut down);
# timeout: no connection free in time (the database answers, but every connection is busy);
# locked: a sqlite file another connection kept locked beyond the busy wait;
# full: no space left (disk, quota, sqlite's max_page_count, Postgres' disk);
# io: the disk failed a read or a write.
Reason = Literal["unreachable", "timeout", "locked", "full", "io"]

# SQLSTATE classes of a database that cannot serve (see the module docstring)
_PG_CLASSES = ("08", "57", "53")
_SQLITE_CODES = {
    sqlite3.SQLITE_BUSY: "locked",
    sqlite3.SQLITE_LOCKED: "locked",
    sqlite3.SQLITE_FULL: "full",
    sqlite3.SQLITE_IOERR: "io",
    sqlite3.SQLITE_CANTOPEN: "io",
}


class StorageUnavailableError(SupervisorGraphError):
    """The memory's database cannot be reached or written now (Postgres down or
    unreachable, no pooled connection in time, a sqlite file locked beyond its busy wait,
    a full disk). Nothing is wrong with the call: try again once the database is back;
    a run that was cut short left its thread to be repaired by the next run (SPEC §19).
    `reason` says which ("unreachable", "timeout", "locked", "full", "io"); the driver's
    own exception is the `__cause__`."""

    def __init__(self, message: str, reason: Reason = "unreachable") -> None:
        super().__init__(message)
        self.reason: Reason = reason


def _sqlite_reason(exc: sqlite3.Error) -> Reason | None:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return _SQLITE_CODES.get(code & 0xFF)  # type: ignore[return-value]
    text = str(exc).lower()  # an error raised without its code (older Pythons)
    if "locked" in text or "busy" in text:
        return "locked"
    if "full" in text:
        return "full"
    if "disk i/o" in text or "unable to open" in text:
        return "io"
    return None


def _postgres_reason(exc: BaseException) -> Reason | None:
    try:
        import psycopg
        from psycopg_pool import PoolTimeout, TooManyRequests
    except ImportError:  # pragma: no cover - without the postgres extra nothing is Postgres
        return None
    if isinstance(exc, (PoolTimeout, TooManyRequests)):
        return "timeout"
    if not isinstance(exc, psycopg.OperationalError):
        return None
    state = getattr(exc, "sqlstate", None)
    if state is None:
        return "unreachable"
    if state == "53100":  # disk_full
        return "full"
    return "unreachable" if state[:2] in _PG_CLASSES else None


def unavailable(exc: BaseException, what: str = "the database") -> StorageUnavailableError | None:
    """`StorageUnavailableError` for a driver error that means the database cannot serve
    now (see the module docstring); None for any other error. `what` names the database
    in the message (never the driver's text, which may hold a host or a path)."""
    if isinstance(exc, StorageUnavailableError):
        return exc
    reason: Reason | None
    if isinstance(exc, sqlite3.Error):
        reason = _sqlite_reason(exc) if isinstance(exc, sqlite3.OperationalError) else None
    else:
        reason = _postgres_reason(exc)
    if reason is None:
        return None
    return StorageUnavailableError(f"{what} is unavailable ({_SAYS[reason]}); try again once it is back", reason)


@contextlib.contextmanager
def outages_as(what: str) -> Iterator[None]:
    """Raise a driver's error that means an outage as `StorageUnavailableError` (the
    driver's error its cause, so the log keeps it); any other error passes unchanged."""
    try:
        yield
    except Exception as exc:
        error = unavailable(exc, what)
        if error is None or error is exc:
            raise
        raise error from exc


_SAYS: dict[str, str] = {
    "unreachable": "no connection",
    "timeout": "no connection free in time",
    "locked": "locked by another connection beyond the busy wait",
    "full": "no space left",
    "io": "a disk I/O error",
}


# The savers' async methods that reach the database (BaseCheckpointSaver's API, plus the
# sqlite checkpointer's own); `translating` wraps those a class has.
SAVER_METHODS = (
    "setup",
    "aget_tuple",
    "alist",
    "aput",
    "aput_writes",
    "adelete_thread",
    "acopy_thread",
    "aprune",
    "adelete_for_runs",
    "aget_delta_channel_history",
    "aput_with_next_write",
    "flush",
)


def translating(cls: C, methods: tuple[str, ...], what: str) -> C:
    """A subclass of `cls` whose `methods` (coroutines or async generators) raise
    `StorageUnavailableError` where the driver's error means an outage (`unavailable`),
    the driver's error as its cause; other errors pass unchanged."""

    def coroutine(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        async def call(*args: Any, **kwargs: Any) -> Any:
            with outages_as(what):
                return await fn(*args, **kwargs)

        return call

    def generator(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        async def call(*args: Any, **kwargs: Any) -> AsyncIterator[Any]:
            with outages_as(what):
                async for item in fn(*args, **kwargs):
                    yield item

        return call

    wrapped: dict[str, Any] = {}
    for name in methods:
        fn = getattr(cls, name, None)
        if inspect.isasyncgenfunction(fn):
            wrapped[name] = generator(fn)  # type: ignore[arg-type]
        elif inspect.iscoroutinefunction(fn):
            wrapped[name] = coroutine(fn)  # type: ignore[arg-type]
    return type(cls.__name__, (cls,), {"__module__": cls.__module__, **wrapped})  # type: ignore[return-value]
