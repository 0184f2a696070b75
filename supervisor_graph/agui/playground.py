"""The playground (SPEC §22): a small offline page at `/` on the AG-UI app.

No build step: `playground/index.html`, `app.js`, `timeline.js`, `travel.js` and `style.css` are
served as they are committed (no CDN, no web fonts, no request leaves the server). The
page talks AG-UI to an endpoint of its own (`/_playground/agent`) that shows subagents
as attributed invocations, whatever the app's main endpoint does, and reads the
resource's threads from two JSON routes, and a thread's checkpoints (time travel, SPEC
§34) from a third.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from supervisor_graph.agent import Agent
from supervisor_graph.agui.agent import AGUIAgent
from supervisor_graph.agui.interrupts import Pause
from supervisor_graph.agui.serving import root_thread, thread_access
from supervisor_graph.agui.sse import add_agui_endpoint
from supervisor_graph.declaration.errors import ThreadBusyError
from supervisor_graph.declaration.remote import RemoteAgent
from supervisor_graph.run.history import history as checkpoints_of
from supervisor_graph.run.resume import pending_interrupts

__all__ = ["PLAYGROUND_AGENT_PATH", "add_playground"]

ASSETS = Path(__file__).with_name("playground")
PLAYGROUND_AGENT_PATH = "/_playground/agent"
_TYPES = {"app.js": "text/javascript", "timeline.js": "text/javascript", "travel.js": "text/javascript", "style.css": "text/css"}


def _delegates(agent: Agent | RemoteAgent) -> dict[str, str]:
    """The subagent each delegation tool calls, by the tool's name: `agent-<key>` is what
    the thread stores, the subagent's id what the live view shows (SUBAGENT_STARTED's
    `name`)."""
    return {f"agent-{key}": str(sub.id) for key, sub in agent.agents.items()}


def _message(message: BaseMessage, delegates: dict[str, str]) -> dict[str, Any] | None:
    """A stored message as the page shows it (delegations' internals are not here; a
    delegation's call and result name the subagent, as `agent`)."""
    text = message.content if isinstance(message.content, str) else message.text
    if isinstance(message, HumanMessage):
        shown: dict[str, Any] = {"id": message.id, "role": "user", "content": text}
        task = message.additional_kwargs.get("background_task")
        if task:  # a background task's outcome notice (SPEC §12), marked for the page
            shown["backgroundTask"] = task
        return shown
    if isinstance(message, AIMessage):
        calls = [_call(c, delegates) for c in message.tool_calls if c["name"] != "update_working_memory"]
        if not text and not calls:
            return None
        return {"id": message.id, "role": "assistant", "content": text, "toolCalls": calls}
    if isinstance(message, ToolMessage):
        if message.name == "update_working_memory":
            return None
        shown = {"id": message.id, "role": "tool", "content": text, "toolCallId": message.tool_call_id, "name": message.name}
        if message.name in delegates:  # the delegation's card: done, or failed (rejected, its subagent failed)
            shown["agent"] = delegates[message.name]
            shown["status"] = message.status
        return shown
    return None


def _call(call: Any, delegates: dict[str, str]) -> dict[str, Any]:
    shown = {"id": call["id"], "name": call["name"], "args": call["args"]}
    if call["name"] in delegates:
        shown["agent"] = delegates[call["name"]]
    return shown


def _checkpoint(entry: dict[str, Any], delegates: dict[str, str]) -> dict[str, Any]:
    """One of `agent.history`'s checkpoints as the page picks a step: its conversation
    shaped as the history route's, `next` empty where a run ended (a turn to fork after)."""
    shown = (_message(m, delegates) for m in entry["messages"])
    return {
        "id": entry["checkpoint_id"],
        "parent": entry["parent_checkpoint_id"],
        "step": entry["step"],
        "source": entry["source"],
        "created_at": entry["created_at"],
        "next": entry["next"],
        "messages": [m for m in shown if m is not None],
        "delegations": entry["delegations"],
    }


async def _callers(bridge: AGUIAgent, thread_id: str, resource: str) -> dict[str, list[str]]:
    """The agent path of each pending item, by interrupt id: suspends and the Mastra
    dialect's approvals do not carry it (this project's approvals have it in their
    metadata), and a reloaded page has no delegation card to name the subagent from."""
    try:
        found = await pending_interrupts(bridge.agent, memory={"thread": thread_id, "resource": resource})
    except ThreadBusyError:
        return {}
    pauses = (Pause.of_value(item.id, item.value) for item in found)
    return {p.interrupt_id(bridge.dialect): list(p.agent_path) for p in pauses if p.agent_path}


def add_playground(app: FastAPI, main: AGUIAgent) -> None:
    """Serve the page at `/` for `main`'s agent (and its assets, its AG-UI endpoint, the
    resource's threads and their history)."""
    bridge = AGUIAgent(
        main.agent,
        resource_id=main.resource_id,
        subagent_visibility="attributed",
        compat="mastra" if main.dialect.camel else None,
        until_idle=main.until_idle,
        on_busy=main.on_busy,
    )
    add_agui_endpoint(app, bridge, PLAYGROUND_AGENT_PATH)
    page = (ASSETS / "index.html").read_text(encoding="utf-8")

    async def index() -> HTMLResponse:
        return HTMLResponse(page.replace("{{AGENT}}", str(bridge.agent.id)), headers={"Cache-Control": "no-store"})

    async def asset(name: str) -> FileResponse:
        if name not in _TYPES:
            raise HTTPException(404)
        return FileResponse(ASSETS / name, media_type=_TYPES[name])

    async def threads(request: Request) -> JSONResponse:
        if bridge.remote is not None:
            return JSONResponse({"threads": []})
        resource = await bridge._resource(request)
        found = await bridge.memory.list_threads(filter={"resource_id": resource})
        own = [t.thread_id for t in found if t.parent_thread_id is None and t.agent_id in (None, bridge.agent.id)]
        return JSONResponse({"threads": own})

    async def history(thread_id: str, request: Request) -> JSONResponse:
        if bridge.remote is not None:
            return JSONResponse({"messages": [], "state": None, "interrupts": []})
        # a well-formed id whose top-level thread is the request's user's (SPEC §19)
        resource = await thread_access(bridge, request, thread_id)
        delegates = _delegates(bridge.agent)
        stored = await bridge.memory.get_messages(thread_id)
        messages = [m for m in (_message(x, delegates) for x in stored) if m is not None]
        state = None
        if bridge._state is not None:
            state = bridge._state.view(await bridge._state.load(thread_id, resource))
        # what the paused run's RUN_FINISHED carried: a reloaded page shows and answers them
        paused = await bridge.waiting(thread_id, resource) if root_thread(thread_id) == thread_id else []
        waiting = [i.model_dump(mode="json", by_alias=True, exclude_none=True) for i in paused]
        shown: dict[str, Any] = {"messages": messages, "state": state, "interrupts": waiting}
        if paused:
            shown["callers"] = await _callers(bridge, thread_id, resource)
        return JSONResponse(shown)

    async def checkpoints(thread_id: str, request: Request) -> JSONResponse:
        if bridge.remote is not None:
            return JSONResponse({"checkpoints": []})
        await thread_access(bridge, request, thread_id)  # as the history route: the user's own threads
        if root_thread(thread_id) != thread_id:  # a delegation's thread forks with its parent's steps
            return JSONResponse({"checkpoints": []})
        delegates = _delegates(bridge.agent)
        found = await checkpoints_of(bridge.agent, {"thread": thread_id})
        return JSONResponse({"checkpoints": [_checkpoint(entry, delegates) for entry in found]})

    app.add_api_route("/", index, methods=["GET"], include_in_schema=False)
    app.add_api_route("/playground/{name}", asset, methods=["GET"], include_in_schema=False)
    app.add_api_route(f"{PLAYGROUND_AGENT_PATH}/threads", threads, methods=["GET"])
    app.add_api_route(PLAYGROUND_AGENT_PATH + "/threads/{thread_id}", history, methods=["GET"])
    app.add_api_route(PLAYGROUND_AGENT_PATH + "/threads/{thread_id}/checkpoints", checkpoints, methods=["GET"])
