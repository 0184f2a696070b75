"""A served agent with an output schema over A2A (SPEC §28): the object is a data part
beside the answer's text, in the answer artifact and in the completing message, read
with the a2a-sdk client over HTTP."""

from __future__ import annotations

import json
from typing import Any

import httpx
from a2a.helpers.proto_helpers import get_data_parts, get_text_parts
from a2a.types import TaskState
from pydantic import BaseModel

from supervisor_graph import Agent, Memory
from supervisor_graph.a2a import add_a2a_routes
from supervisor_graph.agui import AGUIAgent, create_app
from supervisor_graph.testing import ScriptedChatModel, delegate, tool_call
from tests.a2a_serve.test_serve_a2a import _client, _request, _send
from tests.agui.conftest import ThreadServer


class Quote(BaseModel):
    item: str
    price: float


def _team() -> Agent:
    pricer = Agent(id="pricer", description="Prices items.", model=ScriptedChatModel(policy=lambda m: "a lamp is 12.5"))

    def boss(messages: list[Any]) -> Any:
        if messages[-1].type == "tool":
            return tool_call("final_answer", {"item": "lamp", "price": 12.5})
        return delegate("pricer", "price a lamp")

    return Agent(id="quoter", model=ScriptedChatModel(policy=boss), agents={"pricer": pricer}, output_schema=Quote, memory=Memory())


async def test_the_object_is_a_data_part_beside_the_text() -> None:
    bridge = AGUIAgent(_team(), resource_id="user-1")
    app = create_app(bridge)
    add_a2a_routes(app, bridge)
    with ThreadServer(app) as server:
        async with httpx.AsyncClient(timeout=30) as http:
            for streaming in (False, True):
                client = await _client(server.url, http, streaming=streaming)
                task = await _send(client, _request("quote a lamp"))
                assert task.status.state == TaskState.TASK_STATE_COMPLETED
                message = task.status.message.parts
                assert json.loads(get_text_parts(message)[0]) == {"item": "lamp", "price": 12.5}
                assert get_data_parts(message) == [{"item": "lamp", "price": 12.5}]
                artifact = task.artifacts[0].parts
                assert get_data_parts(artifact) == [{"item": "lamp", "price": 12.5}]
