"""`compat="mastra"`: a failed subagent's `SUBAGENT_ERROR` codes (`MASTRA_SUBAGENT_ERROR`,
and `MASTRA_TRIPWIRE` for a guardrail), over real HTTP (uvicorn on loopback, httpx)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi import FastAPI

from supervisor_graph import Agent
from supervisor_graph.agui import AGUIAgent, add_agui_endpoint
from supervisor_graph.testing import ScriptedChatModel
from tests.agui.conftest import ThreadServer, boss, delegate
from tests.agui.test_endpoint import body, post


class GuardrailTripped(Exception):
    """What a guardrail raises: its name says so."""


def failing(agent_id: str, error: Exception) -> Agent:
    return Agent(id=agent_id, description="Fails.", model=ScriptedChatModel(responses=[error]))


def team() -> Agent:
    """A boss that delegates to a subagent whose model fails and to one a guardrail blocks."""
    agents = {
        "flaky": failing("flaky-agent", RuntimeError("provider 500: key sk-secret")),
        "guarded": failing("guarded-agent", GuardrailTripped("blocked: card 4242 4242")),
    }
    return boss(agents, [delegate("flaky", "try"), delegate("guarded", "try")])


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    app = FastAPI()
    add_agui_endpoint(app, AGUIAgent(team(), resource_id="u1", compat="mastra", subagent_visibility="attributed"), "/mastra")
    add_agui_endpoint(app, AGUIAgent(team(), resource_id="u1", subagent_visibility="attributed"), "/native")
    add_agui_endpoint(app, AGUIAgent(team(), resource_id="u1", compat="mastra"), "/hidden")
    with ThreadServer(app) as running:
        yield running.url


async def test_mastra_codes_for_a_failed_and_a_blocked_subagent(url: str) -> None:
    events, _, response = await post(f"{url}/mastra", body("mastra-codes-1", "go"))
    assert response.status_code == 200
    started = {e["subagentRunId"]: e["name"] for e in events if e["type"] == "SUBAGENT_STARTED"}
    errors = {started[e["subagentRunId"]]: e for e in events if e["type"] == "SUBAGENT_ERROR"}
    assert {name: e["code"] for name, e in errors.items()} == {
        "flaky-agent": "MASTRA_SUBAGENT_ERROR",
        "guarded-agent": "MASTRA_TRIPWIRE",
    }
    assert "failed" in errors["flaky-agent"]["message"] and "guardrail" in errors["guarded-agent"]["message"]
    assert not any(secret in str(events) for secret in ("sk-secret", "4242", "Traceback"))
    # only the invocations end: the supervisor is told and the run finishes
    assert events[-1]["type"] == "RUN_FINISHED" and events[-1]["outcome"] == {"type": "success"}
    assert events[-1]["metadata"]["mastra"]["finishReason"] == "stop"
    assert "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT").startswith("final: [Delegation Failed]")


async def test_the_same_run_without_compat_has_the_native_codes(url: str) -> None:
    events, _, _ = await post(f"{url}/native", body("mastra-codes-2", "go"))
    assert sorted(e["code"] for e in events if e["type"] == "SUBAGENT_ERROR") == ["GUARDRAIL", "SUBAGENT_ERROR"]


async def test_hidden_subagents_send_no_subagent_errors_in_mastra_compat(url: str) -> None:
    events, _, _ = await post(f"{url}/hidden", body("mastra-codes-3", "go"))
    assert not [e for e in events if e["type"].startswith("SUBAGENT")]
    assert len([e for e in events if e["type"] == "TOOL_CALL_RESULT"]) == 2  # each delegation's failed result
    assert events[-1]["type"] == "RUN_FINISHED" and events[-1]["outcome"] == {"type": "success"}
