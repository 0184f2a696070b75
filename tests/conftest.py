"""Shared fixtures: every memory test runs on the in-memory, sqlite and Postgres savers,
the way LangGraph's own suite parametrises over savers."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager

import pytest

from supervisor_graph import Memory

# a suite that passed must also exit (see that module)
pytest_plugins = ["tests.exit_watchdog"]

PG_ADMIN = os.environ.get("SUPERVISOR_GRAPH_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")


def _pg_available() -> str | None:
    try:
        import psycopg

        with psycopg.connect(PG_ADMIN, connect_timeout=3, autocommit=True):
            return None
    except Exception as exc:  # noqa: BLE001
        return f"{type(exc).__name__}: {exc}"


@pytest.fixture
def example_nodes() -> set[str]:
    """The nodes the research-and-write example graph must have (SPEC §4 names)."""
    return {
        "supervisor",
        "tools",
        "iteration",
        "task_complete",
        *(f"{key}{suffix}" for key in ("research_agent", "writing_agent") for suffix in ("", ".start", ".complete")),
    }


@contextmanager
def fresh_postgres() -> Iterator[str]:
    """The URL of a new, empty Postgres database, dropped afterwards (fails in CI, skips
    elsewhere, when no server answers)."""
    problem = _pg_available()
    if problem is not None:
        if os.environ.get("CI"):
            pytest.fail(f"PostgreSQL at {PG_ADMIN} is not reachable in CI: {problem}")
        pytest.skip(f"PostgreSQL not reachable: {problem}")
    import psycopg

    name = f"sg_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield PG_ADMIN.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def storage(request: pytest.FixtureRequest, tmp_path) -> AsyncIterator[str]:
    """A storage URL for `Memory(storage=...)`, fresh for each test."""
    kind = request.param
    if kind == "memory":
        yield ":memory:"
    elif kind == "sqlite":
        yield f"file:{tmp_path / 'memory.db'}"
    else:
        with fresh_postgres() as url:
            yield url


@pytest.fixture(params=["sqlite", "postgres"])
def shared_storage(request: pytest.FixtureRequest, tmp_path) -> Iterator[str]:
    """A fresh storage URL several processes can share: a sqlite file or a Postgres database."""
    if request.param == "sqlite":
        yield f"file:{tmp_path / 'shared.db'}"
    else:
        with fresh_postgres() as url:
            yield url


@pytest.fixture
async def memory(storage: str) -> AsyncIterator[Memory]:
    mem = Memory(storage=storage)
    try:
        yield mem
    finally:
        await mem.aclose()
