"""The AG-UI routes of one bridge: `POST {path}` streams a run as server-sent events,
`GET {path}/capabilities` and `GET {path}/health` describe the agent.

Events are encoded by `ag_ui.encoder.EventEncoder`. While the run works without
producing events, a `: keep-alive` comment goes out every `keepalive_seconds` (10 s by
default: proxies cut idle streams). A client that disconnects cancels its run, which
stops at once and leaves its thread consistent. A run's thread id of the wrong shape is
refused with 422 before its stream starts; ownership is checked inside the stream
(`RUN_ERROR` `THREAD_FORBIDDEN`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from ag_ui.core import PROTOCOL_VERSION, RunAgentInput
from ag_ui.encoder import EventEncoder
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from supervisor_graph.agui.agent import AGUIAgent
from supervisor_graph.agui.serving import refusal, thread_id_limit, thread_id_problem
from supervisor_graph.nodes.scope.context import AbortController

__all__ = ["KEEP_ALIVE", "add_agui_endpoint", "route_path"]

KEEP_ALIVE = ": keep-alive\n\n"

# Characters JSON may carry raw that Python's str.splitlines() (which some SSE clients use to
# cut a stream into lines, schemathesis among them) takes for line breaks: an event whose
# text holds one would reach them cut in two. Written as JSON escapes, the event means the
# same to every client. (JSON escapes CR, LF and the other control characters itself.)
_LINE_BREAKS = str.maketrans({"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})


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
            yield encoder.encode(event).translate(_LINE_BREAKS)
    finally:
        watcher.cancel()
        if upcoming is not None:
            # A response whose client left is cancelled again at every await in here (the
            # server's cancel scope), so the step in flight may end after this generator:
            # what it ends with (StopAsyncIteration once the run has closed) is read by the
            # callback, never left as "Task exception was never retrieved" (issue 46).
            upcoming.add_done_callback(_retrieve)
            if not upcoming.done():
                upcoming.cancel()
                with contextlib.suppress(BaseException):
                    await upcoming
        if upcoming is None or upcoming.done():  # else the cancelled step closes the run itself
            await events.aclose()  # type: ignore[attr-defined]


def _retrieve(step: asyncio.Future[Any]) -> None:
    if not step.cancelled():
        step.exception()


def add_agui_endpoint(app: FastAPI, bridge: AGUIAgent, path: str = "/agent", *, keepalive_seconds: float = 10.0) -> None:
    """Serve `bridge` on `app`: `POST path` (AG-UI over SSE), `GET path/capabilities`,
    `GET path/health`."""
    path = route_path(path)

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


def route_path(path: str) -> str:
    """`path` as a route prefix: one leading `/`, no trailing one; `""` for the root."""
    return "/" + path.strip("/") if path.strip("/") else ""
