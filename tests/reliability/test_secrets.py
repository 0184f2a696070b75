"""A provider error's text never reaches storage, streams, the model or WARNING logs
(SPEC §19); in-process hooks still get the original exception."""

from __future__ import annotations

import logging
import sqlite3

import pytest

from supervisor_graph import Agent, Memory, ModelCallError
from supervisor_graph.testing import ScriptedChatModel, delegate

SECRET = "sk-live-0123456789abcdefSECRET"


class AuthenticationError(Exception):
    pass


def leaked_in_storage(storage: str) -> list[str]:
    """Rows of the database that hold the secret, whatever their encoding of strings."""
    found = []
    if storage.startswith("file:"):
        with sqlite3.connect(storage[len("file:") :]) as conn:
            tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
            for table in tables:
                for row in conn.execute(f"SELECT * FROM {table}"):  # noqa: S608 - test code, our own tables
                    if any(SECRET.encode() in (v if isinstance(v, bytes) else str(v).encode()) for v in row):
                        found.append(table)
    else:
        import psycopg

        with psycopg.connect(storage) as conn:
            tables = [r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")]
            for table in tables:
                for row in conn.execute(f'SELECT * FROM "{table}"'):
                    if any(SECRET.encode() in (v if isinstance(v, bytes | memoryview) else str(v).encode()) for v in row):
                        found.append(table)
    return found


async def test_a_subagent_provider_error_stays_out_of_storage_streams_and_logs(shared_storage, caplog) -> None:
    caplog.set_level(logging.DEBUG, logger="supervisor_graph")
    failing = ScriptedChatModel(responses=[AuthenticationError(f"Incorrect API key provided: {SECRET}")])
    sub = Agent(id="sub-agent", description="Fails.", model=failing, retry_policy=None)
    boss_model = ScriptedChatModel(responses=[delegate("sub", "go"), "recovered"])
    memory = Memory(storage=shared_storage)
    boss = Agent(id="boss", model=boss_model, agents={"sub": sub}, memory=memory)
    errors = []
    try:
        stream = await boss.stream(
            "hi", memory={"thread": "t", "resource": "u"}, delegation={"on_delegation_complete": lambda ctx: errors.append(ctx.error)}
        )
        chunks = [chunk async for chunk in stream.full_stream]
        result = await stream.result()
        assert result.text == "recovered"
        [error] = errors  # the hook gets the provider's own exception
        assert isinstance(error, AuthenticationError) and SECRET in str(error)
        assert not [c for c in chunks if SECRET in c.model_dump_json()]
        assert not [m for m in boss_model.calls[-1] if SECRET in str(m.content)]
        history = [s async for s in boss.graph_with(await memory.checkpointer()).aget_state_history({"configurable": {"thread_id": "t"}})]
        assert history and not [s for s in history if SECRET in repr(s)]
    finally:
        await memory.aclose()
    assert leaked_in_storage(shared_storage) == []
    assert not [r for r in caplog.records if r.levelno >= logging.INFO and SECRET in r.getMessage()]
    assert any(r.levelno == logging.DEBUG and r.exc_info and SECRET in str(r.exc_info[1]) for r in caplog.records)


async def test_a_top_level_provider_error_is_a_model_call_error_without_its_text(shared_storage) -> None:
    memory = Memory(storage=shared_storage)
    agent = Agent(id="solo", model=ScriptedChatModel(responses=[AuthenticationError(f"bad key {SECRET}")]), memory=memory, retry_policy=None)
    try:
        with pytest.raises(ModelCallError) as caught:
            await agent.generate("hi", memory={"thread": "t"})
        assert SECRET not in str(caught.value) and "AuthenticationError" in str(caught.value)
        assert isinstance(caught.value.original, AuthenticationError)  # in this process only
        stream = await agent.stream("again", memory={"thread": "t2"})
        chunks = [c async for c in stream.full_stream]
        assert chunks[-1].type == "error" and SECRET not in chunks[-1].model_dump_json()
    finally:
        await memory.aclose()
    assert leaked_in_storage(shared_storage) == []
