"""Threads stored by the last release load and resume with today's code (issue 48).

threads-17a052b.db (sqlite) and threads-17a052b.sql (a `pg_dump --inserts` of a Postgres
database) were written by 17a052b's code running tests/compat/write_threads.py; each
holds three threads: "approval" (paused at a subagent's tool approval), "background" (a
finished background task's record) and "stable" (one turn with a per-parent-thread
subagent). Regenerate them only on purpose, from a release, never from the working tree:

    git worktree add /tmp/old <release> && cd /tmp
    PYTHONPATH=/tmp/old python <repo>/tests/compat/write_threads.py file:/tmp/t.db

Python classes the stored checkpoint blobs name (msgpack ext data: module, class), the
same in both files; loading needs each importable at that path:
    langgraph.types.Send                      (pending delegations, constructor ext 1)
    langgraph.types.Interrupt                 (the paused approval, ext 2)
    langchain_core.messages.ai.AIMessage      (pydantic ext 5)
    langchain_core.messages.human.HumanMessage
    langchain_core.messages.tool.ToolMessage
No `supervisor_graph.*` module path (nodes or otherwise) is serialized in them, so moving
our modules does not break loading. Names that are stored and must stay: the store
namespace "supervisor_graph.background_tasks", the state's channel names (e.g.
`background_tasks`), node names (the subagent key "payer" in a checkpoint namespace,
"notes" for the stable subagent thread), and the lease tables
supervisor_graph_leases / supervisor_graph_lease_waiters.
"""

from __future__ import annotations

import importlib
import shutil
import sqlite3
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, cast

import ormsgpack
import pytest
from langchain_core.messages import HumanMessage, ToolMessage

from supervisor_graph import Memory, NothingPendingError
from supervisor_graph.testing import ScriptedChatModel
from tests.compat.write_threads import (
    APPROVAL,
    BACKGROUND,
    PAY_CALL_ID,
    RESOURCE,
    STABLE,
    approval_team,
    background_team,
    stable_team,
    thread,
)
from tests.conftest import fresh_postgres

HERE = Path(__file__).parent
SQLITE_FIXTURE = HERE / "threads-17a052b.db"
POSTGRES_FIXTURE = HERE / "threads-17a052b.sql"

STORED_CLASSES = {
    ("langgraph.types", "Send"),
    ("langgraph.types", "Interrupt"),
    ("langchain_core.messages.ai", "AIMessage"),
    ("langchain_core.messages.human", "HumanMessage"),
    ("langchain_core.messages.tool", "ToolMessage"),
}


def load_dump(url: str) -> None:
    import psycopg

    # psql meta-commands (\restrict, which newer pg_dump writes) are not SQL; --inserts
    # left no COPY blocks, so the rest runs as one simple-protocol script
    script = "\n".join(line for line in POSTGRES_FIXTURE.read_text().splitlines() if not line.startswith("\\"))
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(script)  # type: ignore[arg-type]


@pytest.fixture(params=["sqlite", "postgres"])
def stored(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A storage URL holding a fresh copy of 17a052b's threads."""
    if request.param == "sqlite":
        copy = tmp_path / "threads.db"
        shutil.copyfile(SQLITE_FIXTURE, copy)
        yield f"file:{copy}"
    else:
        with fresh_postgres() as url:
            load_dump(url)
            yield url


@pytest.fixture
async def memory(stored: str) -> AsyncIterator[Memory]:
    mem = Memory(storage=stored)
    try:
        yield mem
    finally:
        await mem.aclose()


async def test_the_paused_approval_resumes_and_the_tool_runs_once(memory: Memory) -> None:
    ledger: list[int] = []
    team = approval_team(memory, ledger)
    done = await team.approve_tool_call(tool_call_id=PAY_CALL_ID, memory=thread(APPROVAL))
    assert (done.text, done.finish_reason) == ("boss done: payer done: paid 5", "stop")
    assert ledger == [5]
    stored = await memory.get_messages(APPROVAL)
    assert [m.content for m in stored if isinstance(m, HumanMessage)] == ["pay the bill"]
    assert stored[-1].content == "boss done: payer done: paid 5"
    # answered once: a second approval finds nothing waiting, and the tool does not run again
    with pytest.raises(NothingPendingError):
        await team.approve_tool_call(tool_call_id=PAY_CALL_ID, memory=thread(APPROVAL))
    assert ledger == [5]


async def test_the_background_task_record_is_read_and_the_thread_continues(memory: Memory) -> None:
    [old] = await memory.list_background_tasks(BACKGROUND)
    assert (old.status, old.tries, old.agent_key, old.result_text) == (
        "completed",
        1,
        "research",
        "deep facts on dig first",
    )
    team = background_team(memory)
    result = await team.generate_until_idle("second", memory=thread(BACKGROUND))
    first, new = await memory.list_background_tasks(BACKGROUND)
    assert first.task_id == old.task_id and new.task_id != old.task_id
    assert result.text == f"reported: [Background task {new.task_id} completed]\ndeep facts on dig second"
    # the supervisor's first call of this run saw the stored turn, its notice included
    seen = [str(m.content) for m in cast(ScriptedChatModel, team.model).calls[0] if isinstance(m, HumanMessage)]
    assert (
        seen[0] == "first" and seen[1].startswith(f"[Background task {old.task_id} completed]") and seen[-1] == "second"
    )
    notices = [m for m in await memory.get_messages(BACKGROUND) if m.additional_kwargs.get("background_task")]
    assert [n.additional_kwargs["background_task"]["task_id"] for n in notices] == [old.task_id, new.task_id]


async def test_the_stable_subagent_thread_remembers_the_first_turn(memory: Memory) -> None:
    records = {r.thread_id: r for r in await memory.list_threads()}
    sub = records[f"{STABLE}::notes"]
    assert (sub.parent_thread_id, sub.agent_id, sub.resource_id) == (STABLE, "notes-agent", f"{RESOURCE}/notes")
    result = await stable_team(memory).generate("beta", memory=thread(STABLE))
    assert result.text == "boss: sub saw: note alpha | note beta"
    sub_thread = cast(ToolMessage, result.messages[1]).artifact["sub_agent_thread_id"]
    assert sub_thread == f"{STABLE}::notes"
    prompts = [m.content for m in await memory.get_messages(sub_thread) if isinstance(m, HumanMessage)]
    assert [p for p in prompts if str(p).startswith("note ")] == ["note alpha", "note beta"]


async def test_the_stored_thread_records_list(memory: Memory) -> None:
    records = await memory.list_threads({"resource_id": RESOURCE})
    assert {(r.thread_id, r.agent_id, r.parent_thread_id) for r in records} == {
        (APPROVAL, "approval-boss", None),
        (BACKGROUND, "background-boss", None),
        (STABLE, "stable-boss", None),
    }


def stored_class_names(blobs: list[tuple[str, bytes | None]]) -> set[tuple[str, str]]:
    found: set[tuple[str, str]] = set()

    def hook(code: int, data: bytes) -> Any:
        value = ormsgpack.unpackb(data, ext_hook=hook, option=ormsgpack.OPT_NON_STR_KEYS)
        if isinstance(value, list | tuple) and len(value) >= 2 and all(isinstance(v, str) for v in value[:2]):
            found.add((value[0], value[1]))
        return value

    for kind, blob in blobs:
        if kind == "msgpack" and blob is not None:
            ormsgpack.unpackb(bytes(blob), ext_hook=hook, option=ormsgpack.OPT_NON_STR_KEYS)
        else:
            assert blob is None or b"supervisor_graph" not in bytes(blob), (kind, blob)
    return found


def test_every_class_the_stored_blobs_name_still_imports(stored: str) -> None:
    if stored.startswith("file:"):
        with sqlite3.connect(stored.removeprefix("file:")) as conn:
            blobs = conn.execute(
                "SELECT type, checkpoint FROM checkpoints UNION ALL SELECT type, value FROM writes"
            ).fetchall()
    else:
        import psycopg

        with psycopg.connect(stored) as pg:
            blobs = pg.execute(
                "SELECT type, blob FROM checkpoint_blobs UNION ALL SELECT type, blob FROM checkpoint_writes"
            ).fetchall()
    assert stored_class_names(blobs) == STORED_CLASSES
    for module, name in STORED_CLASSES:
        assert isinstance(getattr(importlib.import_module(module), name), type), (module, name)
