"""`Agent(middleware=[...])`: LangChain v1 middleware, checked at declaration (SPEC §33).

What runs them is `nodes/steps/middleware.py`; here is only the declared list's type, so
that middleware the turn cannot run is refused where it is written, naming what to use
instead. LangChain is imported only when an agent brings middleware.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator

__all__ = ["MiddlewareList"]


def _runnable(value: list[Any]) -> list[Any]:
    if value:
        from supervisor_graph.nodes.steps.middleware import unsupported

        for item in value:
            if (why := unsupported(item)) is not None:
                raise ValueError(why)
    return value


MiddlewareList = Annotated[list[Any], AfterValidator(_runnable)]
"""LangChain `AgentMiddleware` objects (classes it ships, your own, its decorators' forms)."""
