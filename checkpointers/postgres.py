"""Postgres through a connection pool that survives its database (issue 46).

One `StoragePool` (psycopg_pool's `AsyncConnectionPool`) per `Memory` and event loop
serves the checkpointer, the store and the thread leases; each statement takes a
connection for itself and gives it back. When the database goes away and comes back,
the pool replaces its broken connections, and the process serves again without a
restart.

What the pool adds to psycopg_pool's own:

- A health check at each checkout that costs no round trip: an idle connection's socket
  has nothing to say, so one that is readable (the server's "terminating connection"
  message, or its end of file after a restart) is checked with
  `AsyncConnectionPool.check_connection` (one round trip), and thrown away when that
  fails. A checkout never waits on a connection the server already closed. (The pool's
  own `check=` hook would pay a round trip at every checkout, and sleeps a second or more
  between two broken connections.)
- Failing fast during an outage. Once a connection was found broken (or none could be
  had in time), the pool knows the database is down: a checkout first tries one
  connection of its own (refused at once while the server is down), so a run fails in
  milliseconds with `StorageUnavailableError` instead of waiting for a connection that
  will not come; tries are at least `PROBE_INTERVAL` apart, the callers in between fail
  at once. The first try that connects ends the outage.
- Reconnects that keep up with the database: psycopg_pool retries a failed connection
  with an exponential backoff (1, 2, 4, ... seconds), so a pool whose database came back
  after a minute could wait another minute to notice. Here a retry gives up after
  `RECONNECT_TIMEOUT` (psycopg_pool's `reconnect_timeout`), and the next checkout asks
  for a new connection, tried at once.

Connections are made with `connect_timeout` and TCP keepalives (an unreachable host, not
only a refused port, fails within seconds), `autocommit=True`, `prepare_threshold=0` and
`row_factory=dict_row`, the settings LangGraph's own savers use; anything the URL sets
itself wins.
"""

from __future__ import annotations

import asyncio
import logging
import select
import time
from contextlib import AsyncExitStack, nullcontext
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from supervisor_graph.checkpointers.lease_queue import WAITERS, WAITERS_INDEX
from supervisor_graph.checkpointers.leases import _TABLE, DEFAULT_LEASE_TTL, Lease, _SqlLeases
from supervisor_graph.checkpointers.outages import (
    SAVER_METHODS,
    Reason,
    StorageUnavailableError,
    outages_as,
    translating,
    unavailable,
)
from supervisor_graph.checkpointers.shield import SHIELD_LIMIT, finish_before_cancel, shielding

__all__ = [
    "PROBE_INTERVAL",
    "RECONNECT_TIMEOUT",
    "PoolOptions",
    "PostgresLeases",
    "open_pool",
    "pooled_saver",
    "pooled_store",
    "wait_setup_lock",
]

log = logging.getLogger(__name__)

# seconds between two tries of a down database by a pool's checkouts
PROBE_INTERVAL = 0.25
# seconds psycopg_pool keeps retrying one lost connection (its backoff) before giving up
RECONNECT_TIMEOUT = 1.0
# A peer that vanishes without closing its connections (host gone, network cut) is found
# dead within ~20 s: by TCP keepalives on an idle connection, by `tcp_user_timeout` (ms)
# on one whose statement the server never acknowledged.
_KEEPALIVES = {
    "keepalives": 1,
    "keepalives_idle": 10,
    "keepalives_interval": 3,
    "keepalives_count": 3,
    "tcp_user_timeout": 20_000,
}

WHAT = "the Postgres database"


class PoolOptions(BaseModel):
    """How `Memory(storage="postgresql://...")` pools its connections (`Memory(pool=...)`).

    One pool per `Memory` and event loop (a `serve` worker has one) serves the
    checkpointer, the store and the thread leases; each statement holds a connection
    only while it runs."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    min_size: int = Field(default=1, ge=1, description="Connections kept open while idle.")
    max_size: int = Field(
        default=10, ge=2, description="Connections at most (schema set-up holds one while it uses another)."
    )
    timeout: float = Field(
        default=3.0,
        gt=0,
        description="Seconds a statement waits for a free connection before `StorageUnavailableError`.",
    )
    connect_timeout: int = Field(
        default=3, ge=2, description="Seconds a new connection may take (libpq's connect_timeout, 2 at least)."
    )

    @model_validator(mode="after")
    def _sizes(self) -> PoolOptions:
        if self.max_size < self.min_size:
            raise ValueError(f"max_size ({self.max_size}) is below min_size ({self.min_size})")
        return self


def _connection_kwargs(url: str, options: PoolOptions) -> dict[str, Any]:
    from psycopg.conninfo import conninfo_to_dict
    from psycopg.rows import dict_row

    given = conninfo_to_dict(url)
    wanted: dict[str, Any] = {"connect_timeout": options.connect_timeout, **_KEEPALIVES}
    kwargs = {key: value for key, value in wanted.items() if key not in given}
    return {**kwargs, "autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}


def _has_news(conn: Any) -> bool:
    """Whether an idle connection's socket is readable (the server closed it, or said
    something unasked); a poll, no round trip."""
    try:
        fd = conn.pgconn.socket
    except Exception:  # noqa: BLE001 - closed: libpq has no socket to give
        return True
    if hasattr(select, "poll"):  # any descriptor number (select() stops at 1024)
        poller = select.poll()
        poller.register(fd, select.POLLIN | select.POLLERR | select.POLLHUP)
        return bool(poller.poll(0))
    readable, _, _ = select.select([fd], [], [], 0)
    return bool(readable)


def _mid_protocol(conn: Any) -> bool:
    """Whether a connection is not ready for a statement of its own: still in libpq's
    pipeline mode (a pipeline whose exit was cut short: psycopg forgot it, but libpq still
    sends no Sync, so every later statement joins one implicit transaction, never
    committed, whose locks block other connections), or busy with a statement.
    psycopg_pool's own check on return looks at the transaction status only, which libpq
    reports idle in that state."""
    from psycopg import pq

    pgconn = conn.pgconn
    return bool(
        conn.closed
        or pgconn.pipeline_status != pq.PipelineStatus.OFF
        or getattr(conn, "_pipeline", None) is not None
        or pgconn.transaction_status == pq.TransactionStatus.ACTIVE
    )


class _OutageWatch:
    """What a `StoragePool` knows of an outage of its database (the module docstring's
    failing fast): since when it is down, and the one try at a time that says it is back."""

    _down_since: float | None = None
    _last_try: float = 0.0
    _told_down = False
    _probing: asyncio.Future[None] | None = None
    # what a try of the database connects with (the pool's own conninfo may be a callable)
    probe_url: str = ""
    probe_kwargs: dict[str, Any] = {}  # noqa: RUF012 - replaced per pool, never mutated

    if TYPE_CHECKING:

        async def check(self) -> None: ...  # the pool's: checks its idle connections

    def _went_down(self) -> None:
        if self._down_since is None:
            self._down_since = time.monotonic()

    async def _try_database(self) -> None:
        """During an outage: one connection of our own says whether the database is
        back. Checkouts meanwhile share the try in progress; within PROBE_INTERVAL of
        a failed one they fail at once."""
        if self._probing is None:
            now = time.monotonic()
            if now - self._last_try < PROBE_INTERVAL:
                raise StorageUnavailableError(f"{WHAT} is unavailable (no connection); try again once it is back")
            self._last_try = now
            self._probing = asyncio.ensure_future(self._connect_once())
        probing = self._probing
        try:
            await asyncio.shield(probing)
        except StorageUnavailableError as exc:  # each caller its own error (tracebacks)
            raise StorageUnavailableError(str(exc), exc.reason) from exc.__cause__
        finally:
            if self._probing is probing and probing.done():
                self._probing = None

    async def _connect_once(self) -> None:
        from psycopg import AsyncConnection

        try:
            probe = await AsyncConnection.connect(self.probe_url, **self.probe_kwargs)
        except Exception as exc:
            if not self._told_down:
                self._told_down = True
                log.warning("the Postgres database is unreachable; statements fail until it is back")
            error = unavailable(exc, WHAT) or StorageUnavailableError(
                f"{WHAT} is unavailable (no connection); try again once it is back"
            )
            raise error from exc
        await probe.close()
        self._last_try = 0.0  # a connection found broken later is tried at once, not failed
        down_for = time.monotonic() - (self._down_since or time.monotonic())
        # the idle connections a restart closed go now, one check each, not one
        # outage each at their next checkout
        await self.check()
        self._down_since = None
        if self._told_down:
            self._told_down = False
            log.warning("the Postgres database is back after %.1f s", down_for)


def _pool_class() -> type:
    """`StoragePool`, made when first needed (psycopg_pool is the postgres extra's)."""
    from psycopg_pool import AsyncConnectionPool, PoolTimeout

    class StoragePool(AsyncConnectionPool[Any], _OutageWatch):
        """`AsyncConnectionPool` with the checkout described in the module docstring."""

        async def getconn(self, timeout: float | None = None) -> Any:
            deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
            while True:
                if self._down_since is not None:
                    await self._try_database()
                try:
                    conn = await super().getconn(max(0.0, deadline - time.monotonic()))
                except PoolTimeout as exc:
                    reason: Reason = "unreachable" if self._down_since is not None else "timeout"
                    raise StorageUnavailableError(
                        f"{WHAT} is unavailable (no connection in {self.timeout:g} s); try again once it is back", reason
                    ) from exc
                if _mid_protocol(conn):  # a net (shield.py keeps them out): closed, replaced
                    await self.putconn(conn)
                    if time.monotonic() >= deadline:
                        raise StorageUnavailableError(f"{WHAT} is unavailable (no connection in time)", "timeout")
                    continue
                if not _has_news(conn):
                    return conn
                try:
                    await AsyncConnectionPool.check_connection(conn)
                    return conn
                except Exception:  # noqa: BLE001 - closed by the server: discarded below
                    await self.putconn(conn)  # a broken connection is discarded and replaced
                # The server closed it: it restarted, or it is gone. One try at once says
                # which (and, when it is back, clears every other idle connection it closed).
                self._went_down()
                self._last_try = 0.0
                if time.monotonic() >= deadline:
                    raise StorageUnavailableError(f"{WHAT} is unavailable (no connection); try again once it is back")

        async def putconn(self, conn: Any) -> None:
            if conn.broken:  # lost in use: the server went away (or was restarted)
                self._went_down()
            elif _mid_protocol(conn):
                # never lent again: its next statements would join a transaction no one
                # commits (see `_mid_protocol`); closing it ends that transaction
                log.warning("discarding a pooled connection left mid-protocol (pipeline mode or a statement unread)")
                await conn.close()
            await super().putconn(conn)

    return StoragePool


_StoragePool: type | None = None


async def open_pool(url: str, options: PoolOptions, stack: AsyncExitStack) -> Any:
    """An open `StoragePool` on `url`, closed by `stack`; `StorageUnavailableError` when
    no connection can be made within the pool's timeout."""
    global _StoragePool
    if _StoragePool is None:
        _StoragePool = _pool_class()
    kwargs = _connection_kwargs(url, options)
    pool = _StoragePool(
        url,
        kwargs=kwargs,
        min_size=options.min_size,
        max_size=options.max_size,
        timeout=options.timeout,
        reconnect_timeout=RECONNECT_TIMEOUT,
        name="supervisor-graph",
        open=False,
    )
    pool.probe_url, pool.probe_kwargs = url, kwargs
    stack.push_async_callback(pool.close, 5.0)
    try:
        # one connection first, so a database that refuses fails the opening at once
        # (the pool's own opening retries until its timeout)
        from psycopg import AsyncConnection

        await (await AsyncConnection.connect(url, **kwargs)).close()
        await pool.open(wait=True, timeout=max(options.timeout, float(options.connect_timeout)))
    except Exception as exc:
        error = unavailable(exc, WHAT)
        if error is None:
            raise
        raise error from exc
    return pool


def pooled_saver(saver_class: type) -> type:
    """`saver_class` (an `AsyncPostgresSaver`) over a pool: outages raised as
    `StorageUnavailableError`, statements a cancelled caller lets finish (shield.py: a
    pipeline cut mid-Sync leaves its connection in an open transaction), and no lock around its statements (the saver's `lock`
    serialises the statements of one shared connection; each pooled statement has a
    connection of its own)."""

    class PooledSaver(shielding(translating(saver_class, SAVER_METHODS, WHAT), SAVER_METHODS)):  # type: ignore[misc]
        def __init__(self, conn: Any, *args: Any, **kwargs: Any) -> None:
            super().__init__(conn, *args, **kwargs)
            self.lock = nullcontext()
            # thread -> its writes in flight (`settle_writes`)
            self._writing: dict[str, set[asyncio.Future[Any]]] = {}

        async def aput(self, config: Any, *args: Any, **kwargs: Any) -> Any:
            return await self._tracked(config, super().aput(config, *args, **kwargs))

        async def aput_writes(self, config: Any, *args: Any, **kwargs: Any) -> Any:
            return await self._tracked(config, super().aput_writes(config, *args, **kwargs))

        async def _tracked(self, config: Any, write: Any) -> Any:
            thread = str(((config or {}).get("configurable") or {}).get("thread_id"))
            task = asyncio.ensure_future(write)
            writing = self._writing.setdefault(thread, set())
            writing.add(task)

            def done(_: Any) -> None:
                writing.discard(task)
                if not writing and self._writing.get(thread) is writing:
                    del self._writing[thread]

            task.add_done_callback(done)
            return await task

        async def settle_writes(self, thread_id: str) -> None:
            """Wait for the thread's writes in flight in this process: a stopped run's
            repair reads the thread only once the results its finished steps were
            writing are stored (on sqlite one connection orders them; here a pool runs
            them side by side)."""
            writing = self._writing.get(thread_id)
            if writing:
                await asyncio.wait(set(writing), timeout=SHIELD_LIMIT)

    PooledSaver.__name__ = PooledSaver.__qualname__ = f"Pooled{saver_class.__name__}"
    return PooledSaver


def pooled_store(store_class: type) -> type:
    """`store_class` (an `AsyncPostgresStore`) whose batches raise outages as
    `StorageUnavailableError` (every read and write of the store is a batch), and which a
    cancelled caller lets finish (shield.py)."""
    return shielding(translating(store_class, ("setup", "abatch"), WHAT), ("abatch",))


async def wait_setup_lock(conn: Any, key: int) -> None:
    """Take the advisory lock `key` on `conn`, polling (see `urls.open_storage`)."""
    while not (await (await conn.execute("SELECT pg_try_advisory_lock(%s) AS ok", (key,))).fetchone())["ok"]:
        await asyncio.sleep(0.05)


class PostgresLeases(_SqlLeases):
    """Lease rows in the Postgres database, timed by its clock (hosts may disagree).

    Each statement takes a connection of the memory's pool for itself (no lock: the
    statements of two runs go to two connections, as those of two processes do), and
    raises `StorageUnavailableError` when the database cannot be reached."""

    placeholder = "%s"
    expires = "now() + %s * interval '1 second'"
    now = "now()"

    def __init__(self, pool: Any, ttl: float = DEFAULT_LEASE_TTL) -> None:
        super().__init__(pool, ttl)
        self._lock = nullcontext()

    @classmethod
    async def open(cls, pool: Any, stack: AsyncExitStack, ttl: float = DEFAULT_LEASE_TTL) -> PostgresLeases:
        """Leases over `pool` (a psycopg_pool pool, see `postgres.py`); the tables are made
        if missing."""
        leases = cls(pool, ttl)
        stack.callback(leases.stop_polling)
        for statement in (_TABLE.format(time="TIMESTAMPTZ"), WAITERS.format(time="TIMESTAMPTZ", serial="BIGSERIAL"), WAITERS_INDEX):
            await leases._run(statement, (), "count")
        return leases

    async def acquire(self, thread_id: str, owner: str) -> Lease | None:
        """The lease, as `_SqlLeases.acquire`; a caller cancelled meanwhile gets
        `CancelledError` and a lease its statements took is given back (no one else
        would, and the thread would wait for it to lapse)."""

        async def give_back(got: Lease | None) -> None:
            if got is not None:
                await self.release(thread_id, owner, repair=got.repair, waiting=got.waiting)

        return await finish_before_cancel(self._acquire(thread_id, owner), give_back)

    async def _run(self, sql: str, params: tuple[Any, ...], want: str) -> Any:
        """One statement on a pooled connection: its first row, its rows or its count. A
        cancelled caller lets it finish (shield.py)."""
        return await finish_before_cancel(self._statement(sql, params, want))

    async def _statement(self, sql: str, params: tuple[Any, ...], want: str) -> Any:
        from psycopg.rows import tuple_row

        with outages_as(WHAT):
            async with self._conn.connection() as conn, conn.cursor(row_factory=tuple_row) as cursor:
                await cursor.execute(sql, params)
                if want == "one":
                    return await cursor.fetchone()
                if want == "all":
                    return await cursor.fetchall()
                return int(cursor.rowcount or 0)

    async def _one(self, template: str, params: tuple[Any, ...]) -> Any:
        return await self._run(self._sql(template), params, "one")

    async def _count(self, template: str, params: tuple[Any, ...]) -> int:
        return int(await self._run(self._sql(template), params, "count"))

    async def _all(self, template: str, params: tuple[Any, ...]) -> list[Any]:
        return list(await self._run(self._sql(template), params, "all"))

    def _times(self, seconds: float | None = None) -> tuple[Any, tuple[Any, ...]]:
        return self.ttl if seconds is None else seconds, ()
