"""What a run cost over A2A (SPEC §33): the `completed` status update's metadata holds
the run's `usage` and its `cost` in USD, where `A2AAgent` reads a remote run's usage."""

from __future__ import annotations

import uuid

import genai_prices
import httpx
import pytest
from a2a.client import ClientConfig, create_client
from a2a.helpers.proto_helpers import new_text_part
from a2a.types import Message, Role, SendMessageRequest, TaskState
from google.protobuf.json_format import MessageToDict

from supervisor_graph import Agent, Memory
from supervisor_graph.a2a import add_a2a_routes
from supervisor_graph.agui import AGUIAgent, create_app
from supervisor_graph.testing import ScriptedChatModel
from tests.agui.conftest import ThreadServer


async def test_the_completed_update_carries_the_runs_usage_and_cost() -> None:
    model = ScriptedChatModel(model_name="gpt-4o", provider="openai", policy=lambda m: "hi")
    bridge = AGUIAgent(Agent(id="priced", model=model, memory=Memory(":memory:")), resource_id="u1")
    app = create_app(bridge)
    add_a2a_routes(app, bridge)
    message = Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=[new_text_part("hello")])
    with ThreadServer(app) as server:
        async with httpx.AsyncClient(timeout=30) as http:
            client = await create_client(server.url, client_config=ClientConfig(httpx_client=http, streaming=True))
            events = [e async for e in client.send_message(SendMessageRequest(message=message))]
    [done] = [e.status_update for e in events if e.HasField("status_update") and e.status_update.status.state == TaskState.TASK_STATE_COMPLETED]
    metadata = MessageToDict(done.metadata)
    expected = genai_prices.calc_price(genai_prices.Usage(input_tokens=10, output_tokens=5), "gpt-4o", provider_id="openai")
    assert metadata == {"usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}, "cost": pytest.approx(float(expected.total_price))}
