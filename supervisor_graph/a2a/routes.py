"""`add_a2a_routes`: the A2A routes of one bridge on a FastAPI app.

`GET /.well-known/agent-card.json`, and the same at `/a2a/.well-known/agent-card.json`
(under the endpoint's path, where the A2A test kit also looks), answers the card
(`card.py`) with the JSON-RPC URL of the host the request named, with `Cache-Control`,
an `ETag` (a matching `If-None-Match` gets 304) and `Last-Modified` (an
`If-Modified-Since` at or after it gets 304 when there is no `If-None-Match`); it is
public: with a token on the app, the card stays readable without it and declares the
bearer scheme that every JSON-RPC call needs.
`POST /a2a` (and `/a2a/`, the same endpoint) is the SDK's JSON-RPC endpoint (1.0
method names and, through the SDK's compatibility layer, the 0.3 ones: `message/send`,
`message/stream`, `tasks/get`, `tasks/cancel`), behind a body check of ours and with
its errors in our words (`dispatch.py`): a hostile body gets a JSON-RPC error, never a
500 or Python's exception text.

Tasks live in the agent's memory (`tasks.py`): on a sqlite file or Postgres they
outlive the process, and each belongs to the user who created it. The app's `Guard`
(host check, token, body limit) sees these routes like every other.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from email.utils import formatdate, parsedate_to_datetime
from typing import Any, Literal

from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.tasks import TaskStore
from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH
from fastapi import FastAPI, Request
from fastapi.responses import Response
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from supervisor_graph.a2a.card import agent_card, card_json
from supervisor_graph.a2a.dispatch import SafeRequestHandler, jsonrpc_routes
from supervisor_graph.a2a.executor import SupervisorExecutor
from supervisor_graph.a2a.tasks import MemoryTaskStore, TaskContextBuilder, resource_owner
from supervisor_graph.agui.agent import AGUIAgent

__all__ = ["A2A_PATH", "CARD_MAX_AGE", "add_a2a_routes"]

A2A_PATH = "/a2a"
# seconds a client may keep the card before asking again (with If-None-Match)
CARD_MAX_AGE = 300


def add_a2a_routes(
    app: FastAPI,
    bridge: AGUIAgent,
    *,
    path: str = A2A_PATH,
    token: bool | None = None,
    compat: Literal["0.3"] | None = None,
    task_store: TaskStore | None = None,
    last_modified: datetime | None = None,
) -> DefaultRequestHandler:
    """Serve `bridge`'s supervisor over A2A on `app`; returns the SDK's request handler.
    Call it before the app serves (it makes the card public on the app's `Guard`).

    `token` says whether the card declares a bearer token (default: whether the app's
    `Guard` asks for one). `compat="0.3"` adds the 0.3 interface and fields to the card.
    `task_store` replaces the tasks' home (default: the agent's memory; an in-process
    store for a remote agent). A callable `resource_id` of the bridge is called with the
    SDK's `ServerCallContext` instead of the HTTP request (`context.state["headers"]`
    holds the request's headers); it owns the tasks as it owns the threads.
    `last_modified` is the card's `Last-Modified` (default: now, when the routes are
    added: the card is built from the agent this process loaded, so it can only change
    with a new process, whose date is later).
    """
    if task_store is None:
        task_store = MemoryTaskStore(_store_of(bridge), resource_owner(bridge.resource_id))
    executor = SupervisorExecutor(bridge, task_store)
    placeholder = agent_card(bridge.agent, f"http://127.0.0.1{path}", compat=compat)
    handler = SafeRequestHandler(
        agent_executor=executor,
        task_store=task_store,
        agent_card=placeholder,
        request_context_builder=TaskContextBuilder(task_store),
    )
    card_paths = [AGENT_CARD_WELL_KNOWN_PATH, path.rstrip("/") + AGENT_CARD_WELL_KNOWN_PATH]
    has_token = _make_card_public(app, card_paths)
    guarded = token if token is not None else has_token
    # whole seconds: an HTTP date holds no less, and If-Modified-Since compares with it
    modified = int((last_modified or datetime.now(UTC)).timestamp())
    modified_date = formatdate(modified, usegmt=True)  # RFC 9110 IMF-fixdate

    async def card(request: Request) -> Response:
        url = str(request.base_url).rstrip("/") + path
        body = json.dumps(card_json(agent_card(bridge.agent, url, token=guarded, compat=compat), compat)).encode()
        etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
        headers = {"Cache-Control": f"public, max-age={CARD_MAX_AGE}", "ETag": etag, "Last-Modified": modified_date}
        if_none_match = request.headers.get("if-none-match")
        # RFC 9110 13.2.2: If-Modified-Since counts only without If-None-Match
        if _matches(if_none_match, etag) or (
            if_none_match is None and _unmodified_since(request.headers.get("if-modified-since"), modified)
        ):
            return Response(status_code=304, headers=headers)
        return Response(body, media_type="application/json", headers=headers)

    for card_path in card_paths:
        app.add_api_route(card_path, card, methods=["GET"], include_in_schema=False)
    # `/a2a/` is the same endpoint, not a redirect: a POST that follows a 307 is one
    # round trip more, and some clients do not follow it
    app.router.routes.extend(jsonrpc_routes(handler, [path, path.rstrip("/") + "/"]))
    app.state.a2a_handler = handler
    return handler


def _store_of(bridge: AGUIAgent) -> Any:
    memory = getattr(bridge.agent, "memory", None)
    if memory is not None:
        return memory.store
    fallback = InMemoryStore()

    async def in_process() -> BaseStore:
        return fallback

    return in_process


def _matches(if_none_match: str | None, etag: str) -> bool:
    """Whether an `If-None-Match` header names `etag` (weak comparison, or `*`)."""
    if not if_none_match:
        return False
    tags = [t.strip().removeprefix("W/") for t in if_none_match.split(",")]
    return "*" in tags or etag in tags


def _unmodified_since(if_modified_since: str | None, modified: int) -> bool:
    """Whether an `If-Modified-Since` date is at or after `modified` (a date that does
    not parse is ignored, as RFC 9110 says)."""
    if not if_modified_since:
        return False
    try:
        when = parsedate_to_datetime(if_modified_since)
    except (TypeError, ValueError, IndexError):
        return False
    if when.tzinfo is None:  # "-0000": a date in UTC
        when = when.replace(tzinfo=UTC)
    return when.timestamp() >= modified


def _make_card_public(app: FastAPI, paths: list[str]) -> bool:
    """Let the card through the app's `Guard` without the token; whether the Guard has one."""
    for middleware in app.user_middleware:
        options: Any = middleware.kwargs
        if getattr(middleware.cls, "__name__", "") == "Guard":
            options["public_paths"] = {*options.get("public_paths", ()), *paths}
            return bool(options.get("auth_token"))
    return False
