"""A guard's tripwire over A2A (SPEC §30): the task fails with the guard's reason, and
the context goes on."""

from __future__ import annotations

import httpx
from a2a.helpers.proto_helpers import get_data_parts, get_text_parts
from a2a.types import TaskState

from supervisor_graph import Agent, Memory
from supervisor_graph.a2a import add_a2a_routes
from supervisor_graph.agui import AGUIAgent, create_app
from supervisor_graph.guardrails import allow, block, guardrail
from supervisor_graph.testing import ScriptedChatModel
from tests.a2a_serve.test_serve_a2a import _client, _request, _send
from tests.agui.conftest import ThreadServer


def no_passwords(ctx) -> object:  # type: ignore[no-untyped-def]
    return block("passwords are not discussed here") if "password" in ctx.text else allow()


async def test_a_tripwire_fails_the_task_with_the_reason() -> None:
    agent = Agent(
        id="helper",
        model=ScriptedChatModel(policy=lambda m: "sure"),
        memory=Memory(),
        guardrails=[guardrail(no_passwords, at="input", name="no-passwords")],
    )
    bridge = AGUIAgent(agent, resource_id="user-1")
    app = create_app(bridge)
    add_a2a_routes(app, bridge)
    with ThreadServer(app) as server:
        async with httpx.AsyncClient(timeout=30) as http:
            client = await _client(server.url, http, streaming=False)
            failed = await _send(client, _request("my password is hunter2"))
            assert failed.status.state == TaskState.TASK_STATE_FAILED
            said = " ".join(get_text_parts(failed.status.message.parts))
            assert "passwords are not discussed here" in said or "guard" in said.lower()
            assert "hunter2" not in said
            assert get_data_parts(failed.status.message.parts)[0]["code"] == "GUARDRAIL"
            again = await _send(client, _request("hello", context_id=failed.context_id))
            assert again.status.state == TaskState.TASK_STATE_COMPLETED
