"""The HTTP endpoint: `POST {path}` streams a run as server-sent events, `GET
{path}/capabilities` and `GET {path}/health` describe the agent.

Events are encoded by `ag_ui.encoder.EventEncoder`. While the run works without
producing events, a `: keep-alive` comment goes out every `keepalive_seconds` (10 s by
default: proxies cut idle streams). A client that disconnects cancels its run, which
stops at once and leaves its thread consistent.

`create_app` puts the checks of `serving.py` in front of every route (SPEC §19): the
`Host` header, the token, the body size, and JSON refusals with a code. A run's thread id
of the wrong shape is refused with 422 before its stream starts; ownership is checked
inside the stream (`RUN_ERROR` `THREAD_FORBIDDEN`), as it always was.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from typing import Any

from ag_ui.core import PROTOCOL_VERSION, RunAgentInput
from ag_ui.encoder import EventEncoder
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from supervisor_graph.agent import Agent
from supervisor_graph.agui.agent import AGUIAgent
from supervisor_graph.agui.serving import (
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_THREAD_ID_LENGTH,
    Guard,
    add_error_handlers,
    default_allowed_hosts,
    is_loopback,
    refusal,
    thread_id_limit,
    thread_id_problem,
)
from supervisor_graph.nodes.context import AbortController

__all__ = ["KEEP_ALIVE", "add_agui_endpoint", "check_binding", "create_app", "serve"]

KEEP_ALIVE = ": keep-alive\n\n"


async def _watch_disconnect(request: Request, controller: AbortController) -> None:
    while True:
        message = await request.receive()
        if message.get("type") == "http.disconnect":
            controller.abort("the client disconnected")
            return


async def _sse(bridge: AGUIAgent, input: RunAgentInput, request: Request, keepalive: float) -> AsyncIterator[str]:
    encoder = EventEncoder(accept=request.headers.get("accept", ""))
    controller = AbortController()
    watcher = asyncio.ensure_future(_watch_disconnect(request, controller))
    events = bridge.run(input, request=request, abort_signal=controller.signal).__aiter__()
    upcoming: asyncio.Future[Any] | None = None
    try:
        while True:
            if upcoming is None:
                upcoming = asyncio.ensure_future(events.__anext__())
            done, _ = await asyncio.wait({upcoming}, timeout=keepalive)
            if not done:
                yield KEEP_ALIVE
                continue
            try:
                event = upcoming.result()
            except StopAsyncIteration:
                break
            upcoming = None
            yield encoder.encode(event)
    finally:
        watcher.cancel()
        if upcoming is not None and not upcoming.done():
            upcoming.cancel()
            with contextlib.suppress(BaseException):
                await upcoming
        await events.aclose()  # type: ignore[attr-defined]


def add_agui_endpoint(app: FastAPI, bridge: AGUIAgent, path: str = "/agent", *, keepalive_seconds: float = 10.0) -> None:
    """Serve `bridge` on `app`: `POST path` (AG-UI over SSE), `GET path/capabilities`,
    `GET path/health`."""
    path = _route_path(path)

    async def run(input: RunAgentInput, request: Request) -> Response:
        problem = thread_id_problem(input.thread_id, thread_id_limit(request))
        if problem is not None:
            return refusal(422, "INVALID_THREAD_ID", problem)
        encoder = EventEncoder(accept=request.headers.get("accept", ""))
        return StreamingResponse(
            _sse(bridge, input, request, keepalive_seconds),
            media_type=encoder.get_content_type(),
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    async def capabilities() -> JSONResponse:
        return JSONResponse(bridge.get_capabilities().model_dump(mode="json", by_alias=True))

    async def health() -> JSONResponse:
        return JSONResponse({"status": "ok", "agent": bridge.agent.id, "protocolVersion": PROTOCOL_VERSION})

    app.add_api_route(path or "/", run, methods=["POST"], response_class=StreamingResponse)
    app.add_api_route(f"{path}/capabilities", capabilities, methods=["GET"])
    app.add_api_route(f"{path}/health", health, methods=["GET"])


def create_app(
    agent: Agent | AGUIAgent,
    path: str = "/agent",
    *,
    playground: bool = True,
    auth_token: str | None = None,
    allowed_hosts: Sequence[str] | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    max_thread_id_length: int = DEFAULT_MAX_THREAD_ID_LENGTH,
    **bridge_options: Any,
) -> FastAPI:
    """A FastAPI app serving `agent` (or a ready bridge) at `path`, and the playground page
    at `/` (SPEC §22; `playground=False` leaves it out).

    Args:
        auth_token: when set, every route but the page, its assets and `.../health`
            needs `Authorization: Bearer <auth_token>` (401 without it).
        allowed_hosts: the names the `Host` header may hold (`*` any, `*.example.com`
            a domain); default `localhost`, `127.0.0.1`, `[::1]`. Others get 400.
        max_body_bytes: a larger request body gets 413.
        max_thread_id_length: a longer thread id gets 422.
    """
    if max_body_bytes < 1 or max_thread_id_length < 1:
        raise ValueError("max_body_bytes and max_thread_id_length must be at least 1")
    bridge = agent if isinstance(agent, AGUIAgent) else AGUIAgent(agent, **bridge_options)
    app = FastAPI(title=f"{bridge.agent.id} (AG-UI)")
    app.state.max_thread_id_length = max_thread_id_length
    add_error_handlers(app)
    add_agui_endpoint(app, bridge, path)
    public = {f"{_route_path(path)}/health"}
    if playground:
        from supervisor_graph.agui.playground import PLAYGROUND_AGENT_PATH, add_playground

        add_playground(app, bridge)
        public |= {"/", f"{PLAYGROUND_AGENT_PATH}/health"}
    app.add_middleware(
        Guard,
        allowed_hosts=list(allowed_hosts) if allowed_hosts is not None else default_allowed_hosts(),
        auth_token=auth_token or None,
        public_paths=public,
        public_prefixes=("/playground/",) if playground else (),
        max_body_bytes=max_body_bytes,
    )
    return app


def _route_path(path: str) -> str:
    return "/" + path.strip("/") if path.strip("/") else ""


def check_binding(host: str, auth_token: str | None) -> None:
    """Refuse to listen beyond this machine without a token.

    Raises:
        ValueError: `host` is not a loopback address and there is no token.
    """
    if not auth_token and not is_loopback(host):
        raise ValueError(
            f"refusing to serve on {host} without a token: anyone who can reach it could run the agent and read "
            "its threads; pass --auth-token TOKEN (or set SUPERVISOR_GRAPH_AUTH_TOKEN), or bind to 127.0.0.1"
        )


def serve(
    agent: Agent | AGUIAgent,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    path: str = "/agent",
    auth_token: str | None = None,
    allowed_hosts: Sequence[str] | None = None,
    **options: Any,
) -> None:
    """Run the endpoint with uvicorn until interrupted (`create_app`'s options; the
    allowed hosts default to the loopback names and `host`).

    Raises:
        ValueError: `host` is not a loopback address and there is no `auth_token`.
    """
    import uvicorn

    check_binding(host, auth_token)
    hosts = list(allowed_hosts) if allowed_hosts is not None else default_allowed_hosts(host)
    app = create_app(agent, path, auth_token=auth_token, allowed_hosts=hosts, **options)
    uvicorn.run(app, host=host, port=port, log_level="info")
