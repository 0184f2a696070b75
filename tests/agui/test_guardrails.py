"""Guardrails over AG-UI, real HTTP (SPEC §30): a top-level trip is `RUN_ERROR` `GUARDRAIL`
(`MASTRA_TRIPWIRE` with compat="mastra"), a trip in a delegation a `SUBAGENT_ERROR` with
the guardrail code, guard verdicts `CUSTOM` events for the playground's timeline, and no
blocked or redacted span in any event or in the stored thread."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import FastAPI

from supervisor_graph import Agent, Memory
from supervisor_graph.agui import AGUIAgent, add_agui_endpoint
from supervisor_graph.guardrails import GuardContext, allow, block, guardrail, pii, redact
from supervisor_graph.testing import ScriptedChatModel
from tests.agui.conftest import ThreadServer, boss, delegate
from tests.agui.test_endpoint import body, post
from tests.nodes.guards.test_guard_stream import ChunkedModel

SECRET = "sk-LEAK9876543210"


def stop_secret(ctx: GuardContext) -> Any:
    return block("a secret") if SECRET in ctx.text else allow()


def scrub(ctx: GuardContext) -> Any:
    return redact(ctx.text.replace(SECRET, "[REDACTED]")) if SECRET in ctx.text else allow()


def guarded_top(memory: Memory) -> Agent:
    return Agent(
        id="boss", model=ScriptedChatModel(policy=lambda m: f"the key {SECRET}" if m[-1].content == "key?" else "fine"), memory=memory,
        guardrails=[guardrail(stop_secret, at="input", name="secrets"), guardrail(scrub, at="output", mode="streaming", window_tokens=8, overlap_tokens=5)],
    )  # fmt: skip


def team() -> Agent:
    worker = Agent(id="worker-agent", description="Works.", model=ScriptedChatModel(policy=lambda m: f"found {SECRET}"))
    agent = boss({"worker": worker}, [delegate("worker", "find")])
    return agent.model_copy(update={"guardrails": [guardrail(stop_secret, at="output", name="secrets")]})


MEMORY = Memory(":memory:")
ADDRESS = "jo.smith@example.com"


def address_at(messages: Any) -> str:
    """`offset N`: an answer with the address N characters further on."""
    return "x" * int(str(messages[-1].content).split()[-1]) + f" please write to {ADDRESS} today and tomorrow."


def pii_streamer(memory: Memory) -> Agent:
    """The issue's setting: windows of 8 tokens, 1 of overlap; the model cuts every 3 characters."""
    guard = pii(kinds=["email"], at="output", mode="streaming", window_tokens=8, overlap_tokens=1)
    return Agent(id="mailer", model=ChunkedModel(policy=address_at, sizes=[3]), guardrails=[guard], memory=memory)


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    app = FastAPI()
    add_agui_endpoint(app, AGUIAgent(guarded_top(MEMORY), resource_id="u1", subagent_visibility="attributed"), "/native")
    add_agui_endpoint(app, AGUIAgent(guarded_top(Memory(":memory:")), resource_id="u1", compat="mastra"), "/mastra")
    add_agui_endpoint(app, AGUIAgent(team(), resource_id="u1", subagent_visibility="attributed"), "/team")
    add_agui_endpoint(app, AGUIAgent(pii_streamer(MEMORY), resource_id="u1"), "/pii")
    with ThreadServer(app) as running:
        yield running.url


async def test_a_blocked_input_is_run_error_guardrail_and_the_thread_goes_on(url: str) -> None:
    events, _, response = await post(f"{url}/native", body("guard-1", f"my key {SECRET}"))
    assert response.status_code == 200
    assert events[-1]["type"] == "RUN_ERROR" and events[-1]["code"] == "GUARDRAIL"
    assert "secrets" in events[-1]["message"]
    trips = [e for e in events if e["type"] == "CUSTOM" and e["name"] == "supervisor_graph.tripwire"]
    assert len(trips) == 1 and trips[0]["value"]["boundary"] == "input"
    assert SECRET not in str(events)
    events, _, _ = await post(f"{url}/native", body("guard-1", "hello"))
    assert events[-1]["type"] == "RUN_FINISHED"
    assert "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT") == "fine"
    stored = await MEMORY.get_messages("guard-1")
    assert [m.content for m in stored] == ["hello", "fine"]


async def test_a_streamed_answer_is_redacted_in_every_event(url: str) -> None:
    events, _, _ = await post(f"{url}/native", body("guard-2", "key?"))
    text = "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert text == "the key [REDACTED]"
    assert SECRET not in str(events) and "sk-" not in str(events)
    verdicts = [e["value"]["verdict"] for e in events if e["type"] == "CUSTOM" and e["name"] == "supervisor_graph.guard"]
    assert "redact" in verdicts
    assert all(SECRET not in str(m.content) for m in await MEMORY.get_messages("guard-2"))


async def test_a_streaming_pii_guard_sends_no_address_at_any_offset(url: str) -> None:
    """Issue 47: with windows of 8 tokens and 1 of overlap the address reached the events and
    the thread in full at most offsets, and a redaction could leave a stray character."""
    for offset in range(12):
        thread = f"pii-{offset}"
        events, _, _ = await post(f"{url}/pii", body(thread, f"offset {offset}"))
        assert events[-1]["type"] == "RUN_FINISHED"
        text = "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
        expected = "x" * offset + " please write to [REDACTED_EMAIL] today and tomorrow."
        assert text == expected
        assert ADDRESS not in str(events) and "@example" not in str(events)
        assert [m.content for m in await MEMORY.get_messages(thread)] == [f"offset {offset}", expected]


async def test_mastra_dialect_code(url: str) -> None:
    events, _, _ = await post(f"{url}/mastra", body("guard-3", f"my key {SECRET}"))
    assert events[-1]["type"] == "RUN_ERROR" and events[-1]["code"] == "MASTRA_TRIPWIRE"


async def test_a_trip_in_a_delegation_is_a_subagent_error_and_the_run_goes_on(url: str) -> None:
    events, _, _ = await post(f"{url}/team", body("guard-4", "go"))
    errors = [e for e in events if e["type"] == "SUBAGENT_ERROR"]
    assert [e["code"] for e in errors] == ["GUARDRAIL"]
    assert events[-1]["type"] == "RUN_FINISHED" and events[-1]["outcome"] == {"type": "success"}
    assert SECRET not in str(events)
    trips = [e for e in events if e["type"] == "CUSTOM" and e["name"] == "supervisor_graph.tripwire"]
    assert trips and trips[0]["value"]["agent_path"] == ["boss", "worker-agent"] and trips[0]["value"].get("subagent_run_id")
