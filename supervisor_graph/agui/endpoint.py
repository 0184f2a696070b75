"""The served app: `create_app` puts a bridge's AG-UI routes (`sse.py`), the playground
and the checks of `serving.py` together (SPEC §19: the `Host` header, the token, the body
size and read deadline, and JSON refusals with a code, which its OpenAPI document
describes: `openapi.py`); `serve` runs it with uvicorn, with a deadline on each request's
head (`deadline.py`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI

from supervisor_graph.agent import Agent
from supervisor_graph.agui.agent import AGUIAgent
from supervisor_graph.agui.openapi import describe_refusals
from supervisor_graph.agui.playground import PLAYGROUND_AGENT_PATH, add_playground
from supervisor_graph.agui.serving import (
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_THREAD_ID_LENGTH,
    DEFAULT_READ_TIMEOUT,
    Guard,
    add_error_handlers,
    default_allowed_hosts,
    is_loopback,
)
from supervisor_graph.agui.sse import add_agui_endpoint, route_path

# add_agui_endpoint is still offered here: callers imported it from this module before
# the routes moved to sse.py
__all__ = ["add_agui_endpoint", "check_binding", "create_app", "run_uvicorn", "serve"]


def create_app(
    agent: Agent | AGUIAgent,
    path: str = "/agent",
    *,
    playground: bool = True,
    auth_token: str | None = None,
    allowed_hosts: Sequence[str] | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    max_thread_id_length: int = DEFAULT_MAX_THREAD_ID_LENGTH,
    read_timeout: float | None = DEFAULT_READ_TIMEOUT,
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
        read_timeout: seconds a request's body has, from the request's start, to
            arrive whole (408 `REQUEST_TIMEOUT` and the connection closed otherwise);
            `serve` gives a request's head the same deadline. None: no deadline.
    """
    if max_body_bytes < 1 or max_thread_id_length < 1:
        raise ValueError("max_body_bytes and max_thread_id_length must be at least 1")
    if read_timeout is not None and read_timeout <= 0:
        raise ValueError("read_timeout must be positive (or None for no deadline)")
    bridge = agent if isinstance(agent, AGUIAgent) else AGUIAgent(agent, **bridge_options)
    app = FastAPI(title=f"{bridge.agent.id} (AG-UI)")
    app.state.max_thread_id_length = max_thread_id_length
    add_error_handlers(app)
    add_agui_endpoint(app, bridge, path)
    public = {f"{route_path(path)}/health"}
    if playground:
        add_playground(app, bridge)
        public |= {"/", f"{PLAYGROUND_AGENT_PATH}/health"}
    app.add_middleware(
        Guard,
        allowed_hosts=list(allowed_hosts) if allowed_hosts is not None else default_allowed_hosts(),
        auth_token=auth_token or None,
        public_paths=public,
        public_prefixes=("/playground/",) if playground else (),
        max_body_bytes=max_body_bytes,
        read_timeout=read_timeout,
    )
    describe_refusals(app, token=bool(auth_token), public_paths=public, max_thread_id_length=max_thread_id_length)
    return app


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
    read_timeout: float | None = DEFAULT_READ_TIMEOUT,
    **options: Any,
) -> None:
    """Run the endpoint with uvicorn until interrupted (`create_app`'s options; the
    allowed hosts default to the loopback names and `host`). `read_timeout` bounds
    each request's head (from the connection, or the previous response) and its body.

    Raises:
        ValueError: `host` is not a loopback address and there is no `auth_token`.
    """
    check_binding(host, auth_token)
    hosts = list(allowed_hosts) if allowed_hosts is not None else default_allowed_hosts(host)
    app = create_app(agent, path, auth_token=auth_token, allowed_hosts=hosts, read_timeout=read_timeout, **options)
    run_uvicorn(app, host=host, port=port, read_timeout=read_timeout)


def run_uvicorn(app: Any, *, host: str, port: int, read_timeout: float | None, **uvicorn_options: Any) -> None:
    """uvicorn serving `app` (an app, or an import string with `factory=True`) with the
    request-head deadline (`deadline.py`) until interrupted."""
    import uvicorn

    from supervisor_graph.agui.deadline import RequestHeadDeadline, set_read_timeout

    set_read_timeout(read_timeout)  # worker processes set theirs in the app factory
    uvicorn.run(app, host=host, port=port, log_level="info", http=RequestHeadDeadline, **uvicorn_options)
