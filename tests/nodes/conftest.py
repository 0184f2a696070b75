"""Hook tests run on both the in-memory and the sqlite checkpointer."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest

from supervisor_graph import Memory

_threads = itertools.count()


@dataclass
class Store:
    memory: Memory
    kind: str

    def call(self, **options: Any) -> dict[str, Any]:
        """Per-call options for a fresh thread on this store."""
        return {"memory": {"thread": f"t{next(_threads)}", "resource": "user"}, **options}


@pytest.fixture(params=["memory", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path) -> AsyncIterator[Store]:
    storage = ":memory:" if request.param == "memory" else f"file:{tmp_path / 'hooks.db'}"
    memory = Memory(storage=storage)
    try:
        yield Store(memory, request.param)
    finally:
        await memory.aclose()
