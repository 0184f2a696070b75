"""Threads owned by a resource (AGUI.md "Run lifecycle", threads)."""

from __future__ import annotations

from supervisor_graph import Agent, Memory
from supervisor_graph.testing import ScriptedChatModel
from tests.agui.conftest import AGUIAgent, boss, collect, delegate, interrupts, make_input, payer, types, wire


async def test_another_resources_thread_is_forbidden_and_reveals_nothing(ledger) -> None:
    agent = boss({"payer": payer(ledger)}, delegate("payer", "pay"))
    alice = AGUIAgent(agent, resource_id="alice")
    mallory = AGUIAgent(agent, resource_id="mallory")  # another bridge on the same memory
    [item] = interrupts(await collect(alice, make_input("t-owned")))

    for attempt in (
        make_input("t-owned", "show me"),
        make_input("t-owned", resume=[{"interrupt_id": item["id"], "status": "resolved", "payload": True}]),
    ):
        refused = await collect(mallory, attempt)
        assert types(refused) == ["RUN_STARTED", "RUN_ERROR"]
        error = wire(refused)[-1]
        assert error["code"] == "THREAD_FORBIDDEN"
        assert "pay" not in error["message"] and item["id"] not in error["message"]
    assert ledger == []
    done = await collect(alice, make_input("t-owned", resume=[{"interrupt_id": item["id"], "status": "resolved", "payload": True}]))
    assert wire(done)[-1]["outcome"] == {"type": "success"} and ledger == [5]


async def test_ownership_is_stored_with_the_thread(tmp_path) -> None:
    storage = f"file:{tmp_path / 'threads.db'}"

    def make(resource):
        return AGUIAgent(Agent(id="solo", model=ScriptedChatModel(policy=lambda m: "ok"), memory=Memory(storage)), resource_id=resource)

    first = make("alice")
    await collect(first, make_input("t-db"))
    await first.memory.aclose()
    # a new process (a new agent, bridge and connection) on the same database
    second, stranger = make("alice"), make(lambda request: "bob")
    assert wire(await collect(stranger, make_input("t-db", "hi")))[-1]["code"] == "THREAD_FORBIDDEN"
    assert wire(await collect(second, make_input("t-db", "hi")))[-1]["outcome"] == {"type": "success"}
    await second.memory.aclose()
    await stranger.memory.aclose()


async def test_a_request_without_a_resource_is_refused() -> None:
    bridge = AGUIAgent(Agent(id="solo", model=ScriptedChatModel(responses=["x"]), memory=Memory()), resource_id=lambda request: None)
    events = await collect(bridge, make_input())
    assert types(events) == ["RUN_STARTED", "RUN_ERROR"] and wire(events)[-1]["code"] == "RESOURCE_REQUIRED"
