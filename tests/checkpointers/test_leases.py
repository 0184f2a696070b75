"""Thread leases on each database (SPEC §19): held, refused, renewed, taken over, and what
the row tells the next run."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from contextlib import AsyncExitStack

from supervisor_graph.checkpointers.leases import Lease, new_owner
from supervisor_graph.checkpointers.urls import open_storage


async def test_a_lease_is_exclusive_renewable_and_taken_over_after_its_ttl(shared_storage: str) -> None:
    async with AsyncExitStack() as stack:
        leases = (await open_storage(shared_storage, stack, lease_ttl=0.5)).leases
        remote = "another-host:4242:abc"  # a holder this machine cannot check: only the clock frees it
        assert await leases.acquire("t", remote) == Lease()
        assert await leases.acquire("t", new_owner()) is None
        assert await leases.renew("t", remote)
        await asyncio.sleep(0.7)  # no renewal for longer than the ttl: the holder is presumed dead
        mine = new_owner()
        assert await leases.acquire("t", mine) == Lease(repair=True)
        assert not await leases.renew("t", remote)  # the old holder learns it lost the lease
        # a reader that did not repair hands the news on; a run that repaired clears it
        await leases.release("t", mine, repair=True)
        again = new_owner()
        assert await leases.acquire("t", again) == Lease(repair=True)
        await leases.release("t", again)
        assert await leases.acquire("t", new_owner()) == Lease()


async def test_the_row_remembers_a_pause_between_runs(shared_storage: str) -> None:
    async with AsyncExitStack() as stack:
        leases = (await open_storage(shared_storage, stack)).leases
        first = new_owner()
        await leases.acquire("t", first)
        await leases.release("t", first, waiting=True)
        second = new_owner()
        assert await leases.acquire("t", second) == Lease(waiting=True)
        await leases.release("t", second, waiting=False)
        assert await leases.acquire("t", new_owner()) == Lease()


async def test_a_dead_local_holder_is_taken_over_at_once(shared_storage: str) -> None:
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = new_owner().split(":")[0] + f":{proc.stdout.strip()}:x"  # this host, a process that has exited
    async with AsyncExitStack() as stack:
        leases = (await open_storage(shared_storage, stack, lease_ttl=3600)).leases
        assert await leases.acquire("t", dead) == Lease()
        assert await leases.acquire("t", new_owner()) == Lease(repair=True)


async def test_a_sqlite_lease_waits_for_a_locked_file_without_blocking_the_loop(tmp_path) -> None:
    """The sqlite leases run on the loop's thread: a file another connection is writing is
    tried again after a sleep, never waited on inside sqlite (the loop keeps turning)."""
    import sqlite3
    import time

    path = tmp_path / "leases.db"
    async with AsyncExitStack() as stack:
        leases = (await open_storage(f"sqlite:///{path}", stack)).leases
        writer = sqlite3.connect(path, isolation_level=None)
        writer.execute("BEGIN IMMEDIATE")  # the file's write lock, held by another connection
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        ticker = asyncio.ensure_future(tick())
        asyncio.get_running_loop().call_later(0.3, writer.execute, "COMMIT")
        began = time.monotonic()
        owner = new_owner()
        assert await leases.acquire("t", owner) == Lease()
        waited = time.monotonic() - began
        ticker.cancel()
        writer.close()
        assert waited >= 0.25, waited  # it did wait for the lock...
        assert ticks >= 10, ticks  # ...while the loop ran other work
        assert await leases.acquire("t", new_owner()) is None
        await leases.release("t", owner)
        assert await leases.acquire("t", new_owner()) == Lease()
