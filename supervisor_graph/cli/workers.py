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

from fastapi import FastAPI

from supervisor_graph.agui.endpoint import create_app
from supervisor_graph.cli.target import load_agent

__all__ = ["SERVE_ENV", "app"]

SERVE_ENV = "SUPERVISOR_GRAPH_SERVE"


def app() -> FastAPI:
    """uvicorn's app factory in each worker process."""
    settings = json.loads(os.environ[SERVE_ENV])
    target = settings.pop("target")
    return create_app(load_agent(target), **settings)
