"""`add_a2a_routes`: the A2A routes of one bridge on a FastAPI app.

`GET /.well-known/agent-card.json` answers the card (`card.py`) with the JSON-RPC URL
of the host the request named; `POST /a2a` is the SDK's JSON-RPC endpoint (1.0 method
names and, through the SDK's compatibility layer, the 0.3 ones: `message/send`,
`message/stream`, `tasks/get`, `tasks/cancel`). Tasks live in this process's memory
(`InMemoryTaskStore`): one server process, one set of tasks. The app's `Guard` (host
check, token, body limit) sees these routes like every other.
"""

from __future__ import annotations

from typing import Any

from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.request_handlers.response_helpers import agent_card_to_dict
from a2a.server.routes import create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore
from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from supervisor_graph.a2a.card import agent_card
from supervisor_graph.a2a.executor import SupervisorExecutor
from supervisor_graph.agui.agent import AGUIAgent

__all__ = ["A2A_PATH", "add_a2a_routes"]

A2A_PATH = "/a2a"


def add_a2a_routes(
    app: FastAPI, bridge: AGUIAgent, *, path: str = A2A_PATH, token: bool | None = None
) -> DefaultRequestHandler:
    """Serve `bridge`'s supervisor over A2A on `app`; returns the SDK's request handler.

    `token` says whether the card declares a bearer token (default: whether the app's
    `Guard` asks for one). A callable `resource_id` of the bridge is called with the
    SDK's `ServerCallContext` instead of the HTTP request (`context.state["headers"]`
    holds the request's headers).
    """
    executor = SupervisorExecutor(bridge)
    placeholder = agent_card(bridge.agent, f"http://127.0.0.1{path}")
    handler = DefaultRequestHandler(agent_executor=executor, task_store=InMemoryTaskStore(), agent_card=placeholder)

    async def card(request: Request) -> JSONResponse:
        guarded = token if token is not None else _guard_has_token(app)
        url = str(request.base_url).rstrip("/") + path
        return JSONResponse(agent_card_to_dict(agent_card(bridge.agent, url, token=guarded)))

    app.add_api_route(AGENT_CARD_WELL_KNOWN_PATH, card, methods=["GET"], include_in_schema=False)
    app.router.routes.extend(create_jsonrpc_routes(handler, rpc_url=path, enable_v0_3_compat=True))
    app.state.a2a_handler = handler
    return handler


def _guard_has_token(app: FastAPI) -> bool:
    for middleware in app.user_middleware:
        options: Any = middleware.kwargs
        if getattr(middleware.cls, "__name__", "") == "Guard":
            return bool(options.get("auth_token"))
    return False
