"""The AG-UI app for `supervisor-graph serve --workers N`: uvicorn starts each worker
process from an import string, so each one loads the agent again from the target the
command was given (carried in `SUPERVISOR_GRAPH_SERVE`). Workers share nothing but the
agent's database: thread leases and thread ownership live there (SPEC §19, §20).

It lives in the CLI, next to the `serve` command that starts it, and not in `agui`:
it loads the agent with the CLI's `load_agent`, and `agui` sits below the CLI, so it
must not import it."""

from __future__ import annotations

import json
import os
from typing import Any

from fastapi import FastAPI

from supervisor_graph.agent import Agent
from supervisor_graph.agui.endpoint import create_app
from supervisor_graph.cli.target import load_agent

__all__ = ["SERVE_ENV", "app", "build_app"]

SERVE_ENV = "SUPERVISOR_GRAPH_SERVE"


def app() -> FastAPI:
    """uvicorn's app factory in each worker process."""
    from supervisor_graph.agui.deadline import set_read_timeout

    settings = json.loads(os.environ[SERVE_ENV])
    target = settings.pop("target")
    # the request-head deadline is the protocol's, per process (uvicorn builds it from the class)
    set_read_timeout(settings.get("read_timeout"))
    return build_app(load_agent(target), settings)


def build_app(agent: Agent, settings: dict[str, Any]) -> FastAPI:
    """`create_app` with `serve`'s settings; `"mcp": True` adds the MCP endpoint at `/mcp`
    (`supervisor_graph.mcp`), `"a2a": True` the A2A card and endpoint (`supervisor_graph.a2a`;
    `"a2a_compat": "0.3"` declares 0.3 too), both run through the same AG-UI bridge."""
    settings = dict(settings)
    mcp, a2a = settings.pop("mcp", False), settings.pop("a2a", False)
    a2a_compat = settings.pop("a2a_compat", None)
    if not (mcp or a2a):
        return create_app(agent, **settings)
    from supervisor_graph.agui.agent import AGUIAgent

    bridge = AGUIAgent(
        agent,
        resource_id=settings.pop("resource_id"),
        subagent_visibility=settings.pop("subagent_visibility"),
        on_busy=settings.pop("on_busy", "reject"),
    )
    path = settings.pop("path")
    app = create_app(bridge, path, **settings)
    if mcp:
        from supervisor_graph.mcp import add_mcp_endpoint

        add_mcp_endpoint(app, bridge, agui_path=path, max_thread_id_length=settings["max_thread_id_length"])
    if a2a:
        from supervisor_graph.a2a import add_a2a_routes

        add_a2a_routes(app, bridge, compat=a2a_compat)
    return app
