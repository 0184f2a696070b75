"""The Postgres pool (checkpointers/postgres.py) on a live server: connections the server
closed (what a restart does to its clients, done here with `pg_terminate_backend`, so
the shared server keeps running) are replaced at their next checkout, and the next run
works without an error or a restart. The outage itself: tests/reliability/test_postgres_restart.py."""

from __future__ import annotations

import asyncio

import psycopg

from supervisor_graph import Agent, Memory
from supervisor_graph.testing import ScriptedChatModel
from tests.conftest import fresh_postgres


def _terminate_clients(url: str) -> int:
    """Close every connection to `url`'s database from the server's side."""
    name = url.rsplit("/", 1)[1]
    with psycopg.connect(url, autocommit=True) as admin:
        row = admin.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            (name,),
        ).fetchone()
    return int(row[0]) if row else 0


async def test_connections_the_server_closed_are_replaced_without_an_error() -> None:
    with fresh_postgres() as url:
        memory = Memory(url, pool={"min_size": 2, "max_size": 4})
        agent = Agent(id="keeper", description="Answers.", model=ScriptedChatModel(policy=lambda m: "answered"), memory=memory)
        try:
            # a few runs at once: the pool holds several connections
            await asyncio.gather(*(agent.generate("first", memory={"thread": f"t{i}"}) for i in range(4)))
            assert _terminate_clients(url) >= 2
            await asyncio.sleep(0.2)  # the server's goodbyes have arrived
            # every idle connection is dead; the runs neither fail nor wait for a retry
            results = await asyncio.gather(*(agent.generate("again", memory={"thread": f"t{i}"}) for i in range(4)))
            assert [r.text for r in results] == ["answered"] * 4
            for i in range(4):
                assert [m.content for m in await memory.get_messages(f"t{i}")] == ["first", "answered", "again", "answered"]
        finally:
            await memory.aclose()
